"""The attacks, each against a real server on loopback: no token, a wrong token, a wrong Host (DNS
rebinding), a cross-site POST, a POST without its CSRF token, path traversal through an id or a day,
a stored-XSS transcript; and the headers every answer carries."""

from __future__ import annotations

import json

import pytest

from memtool.ui.guard import CSP


def test_it_listens_on_loopback_only(shared):
    host, port = shared.server.sock.getsockname()
    assert host == "127.0.0.1" and port == shared.port and port != 0
    assert shared.url.startswith(f"http://127.0.0.1:{port}/?token=")


@pytest.mark.parametrize("path", ["/", "/api/timeline", "/api/search?q=export", "/static/app.js", "/api/events", "/nowhere"])
def test_without_the_session_everything_is_refused(shared, path):
    status, headers, body = shared.client().get(path)
    assert status == 401
    assert b"export" not in body and "set-cookie" not in headers


def test_a_wrong_token_gets_no_cookie(shared):
    status, headers, _ = shared.client().get("/?token=" + "A" * 43)
    assert status == 401 and "set-cookie" not in headers
    assert shared.client(cookie="memtool_ui_%d=%s" % (shared.port, "A" * 43)).get("/api/timeline")[0] == 401


def test_the_token_is_exchanged_for_a_strict_httponly_cookie(shared):
    c = shared.client()
    status, headers, _ = c.get("/?" + shared.url.split("?", 1)[1])
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert shared.server.keys.token not in cookie  # the cookie holds another secret than the URL
    c.cookie = cookie.split(";")[0]
    status, _, page = c.get("/")
    assert status == 200 and shared.csrf.encode() in page


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1.nip.io:{port}", "127.0.0.1:1", "localhost", "", "[::1]:{port}"])
def test_a_wrong_host_is_refused_even_with_the_session(shared, host):
    c = shared.signed_in()
    c.host = host.format(port=shared.port) or " "
    status, _, body = c.get("/api/timeline")
    assert status == 403 and b"export" not in body
    assert c.get("/?" + shared.url.split("?", 1)[1])[0] == 403  # nor is the token exchanged


def test_localhost_is_a_right_host(shared):
    c = shared.signed_in()
    c.host = f"localhost:{shared.port}"
    assert c.get("/api/timeline")[0] == 200


def _entry_id(c) -> str:
    return next(i["id"] for i in c.json("/api/timeline")["items"] if i["kind"] == "entry")


def test_a_post_without_the_csrf_token_changes_nothing(shared):
    c = shared.signed_in()
    eid = _entry_id(c)
    before = shared.mem.get(eid).summary
    for csrf in (None, "wrong", shared.csrf + "x"):
        status, _, _ = c.post(f"/api/entry/{eid}/edit", {"summary": "hijacked"}, csrf=csrf)
        assert status == 403
    assert c.post(f"/api/entry/{eid}/forget", csrf=None)[0] == 403
    assert shared.mem.get(eid).summary == before


def test_a_cross_site_post_is_refused_even_with_the_csrf_token(shared):
    c = shared.signed_in()
    eid = _entry_id(c)
    before = shared.mem.get(eid).summary
    for head in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
        assert c.post(f"/api/entry/{eid}/edit", {"summary": "hijacked"}, csrf=shared.csrf, headers=head)[0] == 403
    # a form post (what a cross-site page can send without CORS) is not JSON
    status, _, _ = c.request(
        "POST", f"/api/entry/{eid}/edit", b"summary=hijacked", {"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": shared.csrf}
    )
    assert status == 403
    assert shared.mem.get(eid).summary == before


@pytest.mark.parametrize("method", ["PUT", "DELETE", "OPTIONS", "PATCH"])
def test_other_methods_and_preflights_are_refused_without_cors(shared, method):
    c = shared.signed_in()
    status, headers, _ = c.request(method, "/api/timeline", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert status == 405
    assert not [k for k in headers if k.startswith("access-control-")]


def test_no_answer_carries_cors_headers_and_every_one_a_strict_csp(shared):
    c = shared.signed_in()
    for path in ("/", "/api/timeline", "/static/app.js", "/static/nope", "/api/entry/nope"):
        _, headers, _ = c.get(path, headers={"Origin": "http://evil.example"})
        assert not [k for k in headers if k.startswith("access-control-")], path
        assert headers["content-security-policy"] == CSP
        assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP


@pytest.mark.parametrize(
    "path",
    [
        "/api/entry/..%2F..%2F..%2Fetc%2Fpasswd",
        "/api/entry/%2E%2E",
        "/api/entry/ctx-20260302-00000000%2F..%2F..%2Fconfig.yaml",
        "/api/log/..%2F..%2Fetc%2Fpasswd",
        "/api/log/2026-03-09.md",
        "/api/log/%2E%2E%2FMEMORY",
        "/static/..%2F..%2Fserver.py",
        "/static/../guard.py",
        "/static/%2E%2E/api.py",
    ],
)
def test_path_traversal_is_refused(shared, path):
    status, _, body = shared.signed_in().get(path)
    assert status in (400, 404), (status, body)
    assert b"root:" not in body and b"import" not in body and b"def " not in body


def test_a_script_in_a_transcript_comes_back_as_data_for_text_nodes(shared):
    c = shared.signed_in()
    item = next(i for i in c.json("/api/timeline?trust=untrusted")["items"])
    status, headers, raw = c.get(f"/api/entry/{item['id']}")
    assert status == 200 and headers["content-type"].startswith("application/json")
    shown = json.loads(raw)
    assert "<script>document.title='pwned'</script>" in shown["transcript"]  # the characters, for textContent
    script = c.get("/static/app.js")[2].decode()
    assert "innerHTML" not in script.replace("no innerHTML", "") and "insertAdjacentHTML" not in script and "outerHTML" not in script
