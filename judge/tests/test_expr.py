"""The expression language (docs/ARCHITECTURE.md): values, precedence, errors, the shared corpus."""

import json
import os
import unittest

from kzoo_judge import expr
from kzoo_judge.expr import ExprError, evaluate

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "catalog", "work_expr_cases.json")


class Values(unittest.TestCase):
    def test_arithmetic_and_precedence(self):
        self.assertEqual(evaluate("2*M*N*K", {"M": 3, "N": 4, "K": 5}), 120.0)
        self.assertEqual(evaluate("1 + 2 * 3", {}), 7.0)
        self.assertEqual(evaluate("(1 + 2) * 3", {}), 9.0)
        self.assertEqual(evaluate("7 / 2", {}), 3.5)
        self.assertEqual(evaluate("7 // 2", {}), 3.0)
        self.assertEqual(evaluate("-7 // 2", {}), -4.0)
        self.assertEqual(evaluate("7 % 3", {}), 1.0)
        self.assertEqual(evaluate("-2 ** 2", {}), -4.0)  # unary minus binds looser than **
        self.assertEqual(evaluate("2 ** 3 ** 2", {}), 512.0)  # right-associative
        self.assertEqual(evaluate("2 ** -1", {}), 0.5)
        self.assertEqual(evaluate("1e3 + 0.5", {}), 1000.5)

    def test_conditional_booleans_and_comparisons(self):
        work = "B*H*T*T*D*2 / (causal ? 2 : 1)"
        d = {"B": 1, "H": 2, "T": 4, "D": 8, "causal": True}
        self.assertEqual(evaluate(work, d), 256.0)
        d["causal"] = False
        self.assertEqual(evaluate(work, d), 512.0)
        self.assertIs(evaluate("1 < 2 && !(3 == 4) || false", {}), True)
        self.assertEqual(evaluate("true ? 1 : false ? 2 : 3", {}), 1.0)
        self.assertEqual(evaluate("false ? 1 : false ? 2 : 3", {}), 3.0)
        self.assertIs(evaluate("a == b", {"a": True, "b": True}), True)

    def test_functions_and_lists(self):
        d = {"counts": [3, 5, 8], "N": 2, "K": 4, "nested": [[1, 2], [3]]}
        self.assertEqual(evaluate("sum(counts)*N*K*2", d), 256.0)
        self.assertEqual(evaluate("len(counts)", d), 3.0)
        self.assertEqual(evaluate("max(counts)", d), 8.0)
        self.assertEqual(evaluate("min(4, N, K)", d), 2.0)
        # sum() adds one flat list; nested lists are a type error (the C++ corpus rule)
        with self.assertRaises(ExprError):
            evaluate("sum(nested)", d)
        self.assertEqual(evaluate("cdiv(300, 128)", d), 3.0)
        self.assertEqual(evaluate("ceil(2.1) + floor(2.9)", d), 5.0)

    def test_shape_entries(self):
        self.assertEqual(expr.shape_entry("K/128", {"K": 256}), 2)
        self.assertEqual(expr.shape_entry("cdiv(K, 128)", {"K": 300}), 3)
        self.assertEqual(expr.shape_entry(7, {}), 7)
        with self.assertRaises(ExprError):
            expr.shape_entry("K/128", {"K": 300})  # 2.34 is not an integer
        with self.assertRaises(ExprError):
            expr.shape_entry("-1", {})
        with self.assertRaises(ExprError):
            expr.shape_entry(True, {})

    def test_work_must_be_positive(self):
        self.assertEqual(expr.work("M*2", {"M": 4}), 8.0)
        for bad in ("M*0", "M < 3", "counts"):
            with self.assertRaises(ExprError):
                expr.work(bad, {"M": 4, "counts": [1]})


class Errors(unittest.TestCase):
    def bad(self, text, dims=None, fragment=""):
        with self.assertRaises(ExprError) as cm:
            evaluate(text, dims or {})
        self.assertIn(fragment, str(cm.exception))

    def test_unknown_names_and_functions(self):
        self.bad("M * 2", {}, "unknown name 'M'")
        self.bad("sqrt(4)", {}, "unknown function")
        self.bad("__import__", {}, "unknown name")

    def test_type_mismatches(self):
        self.bad("counts + 1", {"counts": [1]}, "needs a number")
        self.bad("flag * 2", {"flag": True}, "needs a number")
        self.bad("1 ? 2 : 3", {}, "needs a boolean")
        self.bad("1 && true", {}, "needs a boolean")
        self.bad("!3", {}, "needs a boolean")
        self.bad("1 == true", {}, "compares")
        self.bad("sum(3)", {}, "list")

    def test_arithmetic_errors(self):
        self.bad("1 / 0", {}, "division by zero")
        self.bad("1 // 0", {}, "division by zero")
        self.bad("1 % 0", {}, "division by zero")
        self.bad("cdiv(1, 0)", {}, "division by zero")
        self.bad("10 ** 400", {}, "finite")
        self.bad("max(empty)", {"empty": []}, "empty")

    def test_syntax(self):
        for text in ("", "1 +", "(1", "1)", "1 2", "2M", "a ? b", "1 === 2", "1 & 2", "x.y", "'s'"):
            with self.subTest(text=text):
                with self.assertRaises(ExprError):
                    evaluate(text, {"a": True, "b": 1, "x": 1})

    def test_limits(self):
        evaluate("+".join(["1"] * 128), {})  # 255 tokens: fine
        self.bad("+".join(["1"] * 129), {}, "256 tokens")
        evaluate("(" * 20 + "1" + ")" * 20, {})
        self.bad("(" * 40 + "1" + ")" * 40, {}, "deeper")


class Corpus(unittest.TestCase):
    """catalog/work_expr_cases.json: the same cases the C++ evaluator runs."""

    def test_corpus(self):
        if not os.path.exists(CORPUS):
            self.skipTest("catalog/work_expr_cases.json is not there yet (written by the task helper)")
        with open(CORPUS) as f:
            cases = json.load(f)
        self.assertTrue(cases)
        for c in cases:
            with self.subTest(expr=c["expr"]):
                if "error" in c:
                    with self.assertRaises(ExprError):
                        evaluate(c["expr"], c.get("dims", {}))
                else:
                    v = evaluate(c["expr"], c.get("dims", {}))
                    if isinstance(c["value"], bool):
                        self.assertIs(v, c["value"])
                    else:
                        self.assertEqual(v, c["value"])


if __name__ == "__main__":
    unittest.main()
