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

from darling.classifier import ClassifierServerError, ClassifyClient
from darling.classifier.serving import free_port


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
    with pytest.raises(ClassifierServerError, match="no answer after 3 attempts.*HTTP 500"):
        _client(fault_server.url, max_retries=2).classify_ids([[1]])
    assert fault_server.calls == 3


@pytest.mark.parametrize("fault_server", [("hang", 1)], indirect=True)
def test_timeout_is_retried(fault_server):
    probs = _client(fault_server.url, timeout=0.3, max_retries=2).classify_ids([[1, 2]])
    assert probs.shape == (1, 2)


@pytest.mark.parametrize("fault_server", [("400", 1)], indirect=True)
def test_client_errors_are_not_retried(fault_server):
    with pytest.raises(ClassifierServerError, match="HTTP 400: injected fault"):
        _client(fault_server.url, max_retries=3).classify_ids([[1]])
    assert fault_server.calls == 1


def test_server_down_is_a_clear_error():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(ClassifierServerError, match=r"127\.0\.0\.1.*no answer after 2 attempts \(ConnectError"):
        _client(url, max_retries=1).classify_ids([[1, 2]])


@pytest.mark.parametrize("fault_server", [("500", 0)], indirect=True)
def test_order_is_kept_across_batches_and_replicas(fault_server):
    ids = [[0] * n for n in range(1, 40)]
    probs = _client([fault_server.url, fault_server.url], batch_size=4).classify_ids(ids)
    np.testing.assert_allclose(probs[:, 1], [n / 100 for n in range(1, 40)])
    assert fault_server.calls == 10
