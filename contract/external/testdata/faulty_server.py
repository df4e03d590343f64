"""The Python key-value example (examples/kv-py) with functions that
misbehave, for the runtime's bad-input tests: sleep MS (slower than any
deadline), crash (the process exits mid-call, after a read), and
flood N (N puts, unanswered, then a result)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "kv-py"))

import kv_server  # noqa: E402
from strand_contract import serve  # noqa: E402


def sleep(stub, ms):
    time.sleep(int(ms) / 1000)
    return b"slept"


def crash(stub, key):
    stub.get(key.decode())
    os._exit(3)


def flood(stub, n):
    for i in range(int(n)):
        stub.put("f%06d" % i, b"x")
    return n


if __name__ == "__main__":
    serve(dict(kv_server.FUNCTIONS, sleep=sleep, crash=crash, flood=flood))
