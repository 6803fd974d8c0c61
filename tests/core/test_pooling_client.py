"""Fault handling of the /classify client.

A real vLLM server cannot be made to time out or return 500 on demand, so these tests use a tiny local
HTTP server that injects those faults (and a closed port for a refused connection). The happy path is
tested against the real vLLM server in test_vllm_parity.py.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from darling.core.pooling_client import ClassifyClient, PoolingServerError
from darling.core.vllm_server import free_port


class FaultServer:
    """Answers /classify after `failures` faults of kind `fault` (500, hang, 400)."""

    def __init__(self, fault: str, failures: int):
        self.fault, self.failures, self.calls = fault, failures, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                outer.calls += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.calls <= outer.failures:
                    if outer.fault == "hang":
                        time.sleep(1.0)
                    code = 400 if outer.fault == "400" else 500
                    self.send_response(code)
                    self.end_headers()
                    self.wfile.write(b"injected fault")
                    return
                data = [{"index": i, "probs": [1 - len(x) / 100, len(x) / 100]} for i, x in enumerate(body["input"])]
                payload = json.dumps({"data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def fault_server(request):
    server = FaultServer(*request.param)
    yield server
    server.close()


def _client(url, **kw):
    return ClassifyClient(url, model="m", backoff=0.01, **kw)


@pytest.mark.parametrize("fault_server", [("500", 2)], indirect=True)
def test_retries_through_transient_500s(fault_server):
    probs = _client(fault_server.url, max_retries=3).classify_ids([[1, 2, 3], [4] * 10])
    np.testing.assert_allclose(probs[:, 1], [0.03, 0.10])
    assert fault_server.calls == 3


@pytest.mark.parametrize("fault_server", [("500", 99)], indirect=True)
def test_persistent_500_raises_after_bounded_retries(fault_server):
    with pytest.raises(PoolingServerError, match="no answer after 3 attempts.*HTTP 500"):
        _client(fault_server.url, max_retries=2).classify_ids([[1]])
    assert fault_server.calls == 3


@pytest.mark.parametrize("fault_server", [("hang", 1)], indirect=True)
def test_timeout_is_retried(fault_server):
    probs = _client(fault_server.url, timeout=0.3, max_retries=2).classify_ids([[1, 2]])
    assert probs.shape == (1, 2)


@pytest.mark.parametrize("fault_server", [("400", 1)], indirect=True)
def test_client_errors_are_not_retried(fault_server):
    with pytest.raises(PoolingServerError, match="HTTP 400: injected fault"):
        _client(fault_server.url, max_retries=3).classify_ids([[1]])
    assert fault_server.calls == 1


def test_server_down_is_a_clear_error():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(PoolingServerError, match=r"127\.0\.0\.1.*no answer after 2 attempts \(ConnectError"):
        _client(url, max_retries=1).classify_ids([[1, 2]])


@pytest.mark.parametrize("fault_server", [("500", 0)], indirect=True)
def test_order_is_kept_across_batches_and_replicas(fault_server):
    ids = [[0] * n for n in range(1, 40)]
    probs = _client([fault_server.url, fault_server.url], batch_size=4).classify_ids(ids)
    np.testing.assert_allclose(probs[:, 1], [n / 100 for n in range(1, 40)])
    assert fault_server.calls == 10


def test_a_failed_chunk_goes_to_another_healthy_replica():
    broken, healthy = FaultServer("500", 10**6), FaultServer("500", 0)
    try:
        client = _client([broken.url, healthy.url], batch_size=4, max_retries=1, max_concurrency=1)
        ids = [[0] * n for n in range(1, 17)]  # 4 chunks: two are assigned to the broken replica
        probs = client.classify_ids(ids)
        np.testing.assert_allclose(probs[:, 1], [n / 100 for n in range(1, 17)])
        # The broken replica is tried once (2 attempts), then known down: later chunks go straight elsewhere.
        assert broken.calls == 2 and healthy.calls == 4
        assert client.down == {broken.url}
        client.classify_ids(ids[:8])
        assert broken.calls == 2 and healthy.calls == 6
    finally:
        broken.close()
        healthy.close()


def test_no_replica_answering_is_an_error_naming_each():
    first, second = FaultServer("500", 10**6), FaultServer("500", 10**6)
    try:
        with pytest.raises(PoolingServerError, match=r"no replica answered \(2 tried\).*HTTP 500.*HTTP 500"):
            _client([first.url, second.url], max_retries=1).classify_ids([[1, 2]])
        assert first.calls == 2 and second.calls == 2
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("fault_server", [("400", 1)], indirect=True)
def test_a_rejected_request_is_not_sent_to_other_replicas(fault_server):
    other = FaultServer("500", 0)
    try:
        with pytest.raises(PoolingServerError, match="HTTP 400"):
            _client([fault_server.url, other.url], max_retries=3).classify_ids([[1]])
        assert other.calls == 0
    finally:
        other.close()
