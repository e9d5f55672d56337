#!/usr/bin/env python3
"""Many concurrent submissions through several front doors (tests/cli/scale.sh).

usage: submit_many.py OUT.json PROGRESS_FILE TARBALL KERNEL_ID N THREADS TOKEN... -- DOOR...

Submission i goes first to door i % len(doors), with token i % len(tokens).
A request that gets no HTTP answer (the connection broke: a server was
killed) or a 502/503/504 is sent again to the next door, as a client behind a
load balancer would see it; every other status is that submission's answer.
OUT.json records, per submission, every attempt and the final answer, so the
caller can check that each got exactly one. PROGRESS_FILE holds the number of
submissions answered so far, rewritten as they come.
"""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

RETRYABLE = {502, 503, 504}
MAX_ATTEMPTS = 8


def multipart(fields, filename, data):
    boundary = uuid.uuid4().hex
    out = []
    for k, v in fields.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="package"; filename="{filename}"\r\n'
               'Content-Type: application/gzip\r\n\r\n'.encode())
    out.append(data)
    out.append(f'\r\n--{boundary}--\r\n'.encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


def body_of(response):
    """The answer's JSON, or None when it is not JSON or the connection died while it was read. The
    status line has arrived by then: the server answered, so the submission is not sent again. (An
    error here once escaped the worker thread: a body cut by the test's kill -9 of a server ended the
    client without its answers file.)"""
    try:
        return json.loads(response.read() or b"null")
    except Exception:  # noqa: BLE001 - a cut body, an IncompleteRead, a reset
        return None


def main():
    sep = sys.argv.index("--")
    out_path, progress_path, tarball, kernel_id, n, threads = sys.argv[1:7]
    tokens, doors = sys.argv[7:sep], sys.argv[sep + 1:]
    n, threads = int(n), int(threads)
    data = open(tarball, "rb").read()
    results = [None] * n
    done = [0]
    lock = threading.Lock()

    def one(i):
        token = tokens[i % len(tokens)]
        attempts = []
        door = i % len(doors)
        for attempt in range(MAX_ATTEMPTS):
            body, ctype = multipart({"kernel_id": kernel_id, "package_filename": "pkg.tar.gz",
                                     "optimization_summary": f"scale test submission {i}"}, "pkg.tar.gz", data)
            req = urllib.request.Request(doors[door] + "/api/submissions", data=body, method="POST",
                                         headers={"Content-Type": ctype, "Authorization": "Bearer " + token})
            status, answer = None, None
            try:
                with urllib.request.urlopen(req, timeout=120) as r:
                    status = r.status
                    answer = body_of(r)
            except urllib.error.HTTPError as e:
                status = e.code
                answer = body_of(e)
            except Exception as e:  # no HTTP answer: refused, reset, timed out
                attempts.append({"door": door, "error": type(e).__name__ + ": " + str(e)[:200]})
                door = (door + 1) % len(doors)
                time.sleep(0.2 * (attempt + 1))
                continue
            attempts.append({"door": door, "status": status})
            if status in RETRYABLE:
                door = (door + 1) % len(doors)
                time.sleep(0.2 * (attempt + 1))
                continue
            results[i] = {"attempts": attempts, "status": status, "answer": answer}
            break
        else:
            results[i] = {"attempts": attempts, "status": None, "answer": None}
        with lock:
            done[0] += 1
            with open(progress_path + ".tmp", "w") as f:
                f.write(str(done[0]))
            os.replace(progress_path + ".tmp", progress_path)  # readers never see it half-written

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(one, range(n)))
    json.dump(results, open(out_path, "w"))


if __name__ == "__main__":
    main()
