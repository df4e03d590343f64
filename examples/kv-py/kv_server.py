"""A key-value contract in Python, served as a strand external contract.

Functions: put KEY VALUE, get KEY, del KEY, list START END PAGE [BOOKMARK]
(one page of [START, END) as "k=v" lines, then "next=BOOKMARK" if there is
more), who (the caller's org/name@tx). Run it (docs/contracts.md):

    PYTHONPATH=STUBS /usr/bin/python3 examples/kv-py/kv_server.py \
        --listen 127.0.0.1:9999 --cert server.pem --key server.key \
        --client-ca org1-ca.pem --client-ca org2-ca.pem
"""

from strand_contract import ContractError, serve


def put(stub, key, value):
    stub.put(key.decode(), value)
    stub.set_event("put", key)


def get(stub, key):
    v = stub.get(key.decode())
    if v is None:
        raise ContractError(404, "key %s does not exist" % key.decode())
    return v


def delete(stub, key):
    stub.delete(key.decode())


def list_(stub, start, end, page, bookmark=b""):
    kvs, nxt = stub.range(start.decode(), end.decode(), int(page), bookmark.decode())
    out = "".join("%s=%s\n" % (k, v.decode()) for k, v in kvs)
    if nxt:
        out += "next=%s\n" % nxt
    return out.encode()


def who(stub):
    org, _, name = stub.creator
    return ("%s/%s@%s" % (org, name, stub.tx_id)).encode()


FUNCTIONS = {"put": put, "get": get, "del": delete, "list": list_, "who": who}

if __name__ == "__main__":
    serve(FUNCTIONS)
