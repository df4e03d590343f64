"""A small Python SDK for strand's external contracts (docs/contracts.md).

It serves a contract -- a dict of functions ``fn(stub, *args) -> bytes`` --
over the protocol of api/contract.proto with mutual TLS, using Debian's
python3-grpcio. The protocol stubs (contract_pb2, contract_pb2_grpc) are
generated from api/contract.proto:

    /usr/bin/python3 -m grpc_tools.protoc -Iapi --python_out=DIR \
        --grpc_python_out=DIR api/contract.proto

and found on PYTHONPATH.
"""

import argparse
import queue
import sys
import threading
from concurrent import futures

import grpc

import contract_pb2 as pb
import contract_pb2_grpc as pb_grpc

VERSION = 1


class ContractError(Exception):
    """A contract's own failure: status 4xx (the caller's fault) or 5xx."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


class Cancelled(Exception):
    """The peer stopped waiting for the call (its deadline passed)."""


class Stub:
    """A call's view of the ledger, as contract.Stub in Go."""

    def __init__(self, call_id, invoke, send):
        self._id = call_id
        self._send = send
        self._answers = queue.Queue(maxsize=1)
        self._cancelled = threading.Event()
        self.function = invoke.function
        self.args = list(invoke.args)
        self.tx_id = invoke.tx_id
        self.channel = invoke.channel
        self.timestamp_unix_nano = invoke.timestamp_unix_nano
        self.creator = (invoke.creator_org, invoke.creator_role, invoke.creator_name)

    def _request(self, ask, **op):
        if self._cancelled.is_set():
            raise Cancelled()
        self._send(pb.ContractReply(call=self._id, state=pb.ContractStateRequest(**op)))
        if not ask:
            return None
        answer = self._answers.get()
        if answer is None:
            raise Cancelled()
        if answer.error:
            raise ContractError(500, answer.error)
        return answer

    def get(self, key):
        """The value of key, or None if it does not exist."""
        v = self._request(True, get=pb.StateGet(key=key)).values[0]
        return v.value if v.found else None

    def get_many(self, *keys):
        return [v.value if v.found else None
                for v in self._request(True, get_multi=pb.StateGetMulti(keys=keys)).values]

    def put(self, key, value):
        if not 1 <= len(key.encode()) <= 1024:
            raise ContractError(400, "key %r is %d bytes: want 1 to 1024" % (key, len(key.encode())))
        self._request(False, put=pb.StatePut(key=key, value=value))

    def delete(self, key):
        self._request(False, **{"del": pb.StateDel(key=key)})

    def range(self, start, end="", page_size=0, bookmark=""):
        """([(key, value), ...], next bookmark or "") of [start, end)."""
        a = self._request(True, range=pb.StateRange(start=start, end=end, page_size=page_size, bookmark=bookmark))
        return [(kv.key, kv.value) for kv in a.kvs], a.bookmark

    def set_event(self, name, payload):
        self._request(False, event=pb.StateEvent(name=name, payload=payload))


class _Servicer(pb_grpc.ContractServicer):
    def __init__(self, functions, pool):
        self._functions = functions
        self._pool = pool

    def Connect(self, requests, context):
        out = queue.Queue()
        calls = {}
        lock = threading.Lock()

        def run(stub):
            reply = pb.ContractResult()
            try:
                fn = self._functions.get(stub.function)
                if fn is None:
                    raise ContractError(400, "unknown function %r: want one of %s"
                                        % (stub.function, ", ".join(sorted(self._functions))))
                reply.payload = fn(stub, *stub.args) or b""
            except Cancelled:
                return
            except ContractError as e:
                reply.status, reply.message = e.status, e.message
            except Exception as e:  # the contract's bug: status 500
                reply.status, reply.message = 500, "%s: %s" % (type(e).__name__, e)
            finally:
                with lock:
                    calls.pop(stub._id, None)
            if not stub._cancelled.is_set():
                out.put(pb.ContractReply(call=stub._id, result=reply))

        def read():
            try:
                for req in requests:
                    kind = req.WhichOneof("kind")
                    if kind == "hello":
                        out.put(pb.ContractReply(call=0, hello=pb.ContractHello(version=VERSION)))
                    elif kind == "invoke":
                        stub = Stub(req.call, req.invoke, out.put)
                        with lock:
                            calls[req.call] = stub
                        self._pool.submit(run, stub)
                    elif kind in ("state", "cancel"):
                        with lock:
                            stub = calls.get(req.call)
                        if stub is None:
                            continue
                        if kind == "state":
                            try:
                                stub._answers.put_nowait(req.state)
                            except queue.Full:
                                pass
                        else:
                            stub._cancelled.set()
                            try:
                                stub._answers.put_nowait(None)
                            except queue.Full:
                                pass
            except grpc.RpcError:
                pass
            finally:
                with lock:
                    for stub in calls.values():
                        stub._cancelled.set()
                        try:
                            stub._answers.put_nowait(None)
                        except queue.Full:
                            pass
                out.put(None)

        threading.Thread(target=read, daemon=True).start()
        while True:
            m = out.get()
            if m is None:
                return
            yield m


def serve(functions, argv=None):
    """Serve functions with the command line's --listen, --cert, --key and
    --client-ca (mutual TLS: only clients whose certificates chain to the
    client CA, the channel's peers, may call). Prints "listening on ADDR"
    once it serves, then serves until killed."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:9999")
    ap.add_argument("--cert", required=True, help="the server's TLS certificate (PEM)")
    ap.add_argument("--key", required=True, help="its key (PEM)")
    ap.add_argument("--client-ca", required=True, action="append",
                    help="a CA of the peers allowed to call (PEM); repeat it for each org")
    a = ap.parse_args(argv)
    read = lambda f: open(f, "rb").read()
    # Every org's CA: the last one alone would refuse the other orgs'
    # peers at the handshake ("peer did not return a certificate").
    roots = b"".join(read(f).rstrip(b"\n") + b"\n" for f in a.client_ca)
    creds = grpc.ssl_server_credentials([(read(a.key), read(a.cert))],
                                        root_certificates=roots, require_client_auth=True)
    pool = futures.ThreadPoolExecutor(max_workers=64)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16),
                         options=[("grpc.max_receive_message_length", 16 << 20),
                                  ("grpc.max_send_message_length", 16 << 20)])
    pb_grpc.add_ContractServicer_to_server(_Servicer(functions, pool), server)
    port = server.add_secure_port(a.listen, creds)
    if port == 0:
        sys.exit("cannot listen on %s" % a.listen)
    server.start()
    print("listening on %s:%d" % (a.listen.rsplit(":", 1)[0], port), flush=True)
    server.wait_for_termination()
