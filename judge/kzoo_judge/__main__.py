"""python3 -m kzoo_judge {run,calibrate}: the judge without a kernel package around it."""

import argparse
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m kzoo_judge")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="judge a module against a task; one benchmark document on stdout")
    r.add_argument("--task", required=True)
    r.add_argument("--module-dir", required=True, help="folder holding the task's definition.module")
    r.add_argument("--device", choices=("cpu", "cuda"), default=None)
    r.add_argument("--workload")
    r.add_argument("--kernel-id", default="local")
    r.add_argument("--runner-id", default="local")
    r.add_argument("--iterations", type=int)
    r.add_argument("--warmup", type=int)
    r.add_argument("--trials", type=int)
    r.add_argument("--incumbent", help="folder holding the incumbent's definition.module: time both, A/B (ab.py)")
    r.add_argument("--options", help="more KZOO_OPTIONS keys, as a JSON object (e.g. '{\"trace\": true, \"pad_us\": 100}')")
    c = sub.add_parser("calibrate", help="measure a task's E and D")
    c.add_argument("--task-dir", required=True)
    c.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    c.add_argument("--workload")
    c.add_argument("--seeds", type=int, default=4)
    c.add_argument("--write", action="store_true", help="store E, D and basis in task.json grading.tolerance")
    args = p.parse_args(argv)
    if args.cmd == "calibrate":
        from . import calibrate
        return calibrate.main(args)
    from . import entry, task as taskmod
    entry.harden_judge()
    secret = entry.read_secret()
    verdict_fd = entry.take_verdict_fd()
    try:
        task = taskmod.load(args.task)
        cases = entry.cases_from_workload(task, args.workload)
    except taskmod.TaskError as e:
        print("kzoo-judge: %s" % e, file=sys.stderr)
        return 2
    device = args.device or entry.default_device()
    import os
    opts = {k: v for k, v in (("iterations", args.iterations), ("warmup", args.warmup), ("trials", args.trials)) if v is not None}
    if args.incumbent:
        opts["incumbent_src"] = os.path.abspath(args.incumbent)
    if args.options:
        import json
        try:
            more = json.loads(args.options)
        except ValueError as e:
            print("kzoo-judge: --options is not JSON: %s" % e, file=sys.stderr)
            return 2
        if not isinstance(more, dict):
            print("kzoo-judge: --options must be a JSON object", file=sys.stderr)
            return 2
        opts.update(more)
    doc = entry.run_judge(task, cases, secret, device, os.path.abspath(args.module_dir), opts, args.kernel_id, args.runner_id,
                          args.task)
    return entry.emit(doc, secret, verdict_fd)


if __name__ == "__main__":
    sys.exit(main())
