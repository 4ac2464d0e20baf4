"""The one redaction function: what it masks, what it leaves alone, and the shapes it walks."""

from __future__ import annotations

import collections
import dataclasses
import logging
from typing import Any

import pytest

from flower.base import secrets
from flower.base.secrets import MASK, RedactingFilter, known_secrets, redact, redact_value, remember
from flower.core.events import ToolCall, ToolResult


@pytest.fixture(autouse=True)
def _no_host_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*secrets.CREDENTIAL_ENV, secrets.HEADER_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(secrets, "_remembered", set())


def test_configured_credentials_and_key_shapes_are_masked(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "gateway-token-123456")
    text = (
        "auth gateway-token-123456 failed; key sk-ant-api03-abcdefghijkl; header Bearer abcdefghijklmnopqrstu"
    )
    out = redact(text)
    assert (
        "gateway-token-123456" not in out and "sk-ant-api03" not in out and "abcdefghijklmnopqrstu" not in out
    )
    assert out.count(MASK) == 3


def test_ordinary_text_is_left_alone(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk")  # too short to be a real key: never masks words
    assert redact("ask the sky") == "ask the sky"
    assert redact(None) is None and redact("") == ""


@pytest.mark.parametrize("name", secrets.CREDENTIAL_ENV)
def test_every_known_credential_variable_is_masked_by_value(monkeypatch, name):
    monkeypatch.setenv(name, "marker-Value-0042")
    assert (
        redact("printenv said marker-Value-0042 and nothing else") == f"printenv said {MASK} and nothing else"
    )


def test_a_gateways_header_values_are_known_credentials(monkeypatch):
    headers = "x-gateway-key: gw-marker-777\nx-team: platform-team"
    # longest first, then by text
    assert known_secrets({"ANTHROPIC_CUSTOM_HEADERS": headers}) == ["gw-marker-777", "platform-team"]
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", headers)
    assert redact("sent gw-marker-777") == f"sent {MASK}"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("DB_PASSWORD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("NPM_API_KEY", True),
        ("KEYBOARD", False),
        ("PWD", False),
        ("TOX_TESTENV_PASSENV", False),
        ("github_token", False),  # environment names are upper case
    ],
)
def test_secret_names(name, secret):
    assert secrets.is_secret_name(name) is secret


def test_any_variable_named_like_a_secret_is_masked_by_value(monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "plain-value-31337")
    monkeypatch.setenv("EDITOR_THEME", "plain-value-99999")
    assert redact("echoed plain-value-31337 and plain-value-99999") == f"echoed {MASK} and plain-value-99999"


def test_a_remembered_value_is_masked_even_when_not_in_the_environment():
    remember("from-dotenv-9911")
    remember("short")  # below the minimum: never remembered, it would mask words
    assert redact("cat .env -> from-dotenv-9911, short") == f"cat .env -> {MASK}, short"


def test_a_longer_known_value_is_masked_whole_before_a_shorter_one_inside_it(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "abcdefgh-long-value")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "abcdefgh")
    assert redact("k=abcdefgh-long-value") == f"k={MASK}"


# (id, text, what must be gone, what must stay)
SHAPES = [
    ("anthropic-key", "key: sk-ant-api03-AbCdEf0123456789", "sk-ant-api03", "key: "),
    ("anthropic-oauth", "sk-ant-oat01-ZYXWVUTSRQPONM_0123", "sk-ant-oat01", ""),
    ("openai-project", "OPENAI=sk-proj-abcdefghijklmnopqrstuvwx", "abcdefghijklmnop", "OPENAI="),
    ("github-pat", "token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "ghp_0123", "token "),
    ("github-fine", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrs", "github_pat_11", ""),
    ("gitlab", "glpat-abcdefghij0123456789", "glpat-", ""),
    ("slack", "xoxb-123456789012-abcdefghij", "xoxb-", ""),
    ("aws-key-id", "aws_access_key_id = AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP", "aws_access_key_id"),
    ("google", "AIzaSyA-0123456789abcdefghijklmnopqrstu", "AIzaSy", ""),
    ("stripe", "sk_live_0123456789abcdefghij", "sk_live_", ""),
    ("npm", "//registry/:_authToken=npm_0123456789abcdefghijklmnopqrstuvwxyz", "npm_0123", "_authToken="),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r", "eyJzdWIi", ""),
    (
        "private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----\nnext line",
        "b3BlbnNzaC1rZXktdjEAAAAA",
        "next line",
    ),
    ("private-key-cut-off", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow", "MIIEow", ""),
    ("bearer", "Authorization: Bearer abcdefghijklmnopqrstuvwx.yz", "abcdefghijklmnopqrstuvwx", "Bearer "),
    ("x-api-key", "x-api-key: 0123456789abcdef", "0123456789abcdef", "x-api-key: "),
    (
        "json-authorization",
        '{"authorization": "tok_0123456789abcdef"}',
        "tok_0123456789abcdef",
        '"authorization"',
    ),
    ("url-password", "git clone https://bob:hunter2hunter2@git.example/x.git", "hunter2", "https://bob:"),
    ("env-line", "GITHUB_TOKEN=abcd1234efgh", "abcd1234efgh", "GITHUB_TOKEN="),
    ("dotenv-quoted", 'DB_PASSWORD="correct horse"', "correct", "DB_PASSWORD="),
    ("aws-secret", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY="),
    ("export", "export MY_API_KEY=zzzz-9999", "zzzz-9999", "export MY_API_KEY="),
    ("netrc", "machine api.example login me password hunter2hunter2", "hunter2", "login me password "),
    ("netrc-lines", "machine h\n  login me\n  password s3cr3t-value", "s3cr3t", "password "),
    ("pgpass", "db.example:5432:app:me:s3cr3tPass", "s3cr3tPass", "db.example:5432:app:me:"),
    ("docker-auth", '{"auths": {"r": {"auth": "bWU6c2VjcmV0MTIzNDU="}}}', "bWU6c2VjcmV0", '"auth": "'),
    ("vault", "token hvs.CAESIJ0123456789abcdefghij", "CAESIJ", "token "),
    ("yaml-quoted", 'api_key: "abcd1234efgh"', "abcd1234efgh", "api_key: "),
    ("json-camel", '"clientSecret": "GOCSPX-0123456789abc"', "GOCSPX", '"clientSecret": '),
    (
        "ini-random",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9",
        "wJalrX",
        "aws_secret_access_key = ",
    ),
    ("source-literal", 'password = "hunter22"', "hunter22", "password = "),
    ("kube-key-data", "client-key-data: LS0tLS1CRUdJTiBSU0Eg", "LS0tLS1C", "client-key-data: "),
]


@pytest.mark.parametrize(("text", "gone", "kept"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_secret_shapes_are_masked(text: str, gone: str, kept: str) -> None:
    out = redact(text)
    assert gone not in out and MASK in out and kept in out


# (id, text): ordinary output that looks a little like a secret and must come through unchanged
ORDINARY = [
    ("uuid", "session 3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b resumed"),
    ("sha", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("tool-id", "toolu_01ABCDEFGHJKLMNPQRSTUVWXYZ"),
    ("pwd", "PWD=/home/me/project OLDPWD=/home/me"),
    ("keyboard", "KEYBOARD_LAYOUT=us TOX_TESTENV_PASSENV=OPENBLAS_*"),
    ("reference", "API_KEY=$API_KEY TOKEN=${TOKEN}"),
    ("short", "KEY=ab"),
    ("code", "token = os.environ['GITHUB_TOKEN']\nif not token: raise SystemExit(1)"),
    ("prose", "the bearer of this letter; basic arithmetic; a token of thanks"),
    ("url", "https://docs.example/a:b@c is not a password"),
    ("path", "/usr/lib/python3/site-packages/keyring/backends/SecretService.py"),
    ("git-config-key", "GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_KEY_12=tag.gpgSign"),
    ("type-hint", "def login(user: str, password: str) -> Token:\n    token: Optional[str] = None"),
    ("lookup", 'token = request.args["token"]\nsecret_key = os.environ["SECRET_KEY"]'),
    ("reference", 'secret: "${DB_SECRET}"\npassword: "{{ vault_password }}"'),
    ("passwd-line", "root:x:0:0:root:/root:/bin/bash"),
    ("clock", "at 12:30:45 on 2024:01:02"),
    ("weak-yaml", "password: hunter22"),
]


@pytest.mark.parametrize("text", [o[1] for o in ORDINARY], ids=[o[0] for o in ORDINARY])
def test_ordinary_output_is_not_touched(text: str) -> None:
    assert redact(text) == text


def test_masking_twice_changes_nothing():
    once = redact("GITHUB_TOKEN=abcd1234efgh sk-ant-api03-AbCdEf0123456789")
    assert redact(once) == once


def test_redact_value_walks_dicts_lists_and_tuples_and_keeps_keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "marker-key-123456")
    entry: dict[str, Any] = {
        "type": "user",
        "uuid": "3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b",
        "message": {"content": [{"type": "tool_result", "content": "ANTHROPIC_API_KEY=marker-key-123456"}]},
        "pair": ("marker-key-123456", 7),
        "marker-key-123456": "keys are names, not values",
    }
    out = redact_value(entry)
    assert "marker-key-123456" not in str({k: v for k, v in out.items() if k != "marker-key-123456"})
    assert out["message"]["content"][0]["content"] == f"ANTHROPIC_API_KEY={MASK}"
    assert out["pair"] == (MASK, 7) and isinstance(out["pair"], tuple)
    assert out["uuid"] == entry["uuid"]
    assert entry["message"]["content"][0]["content"].endswith("marker-key-123456")  # the input is not changed


def test_redact_value_returns_the_same_object_when_nothing_is_secret():
    entry: dict[str, Any] = {"a": ["b", {"c": "d"}], "n": 1}
    assert redact_value(entry) is entry


def test_redact_value_keeps_the_type_of_what_it_is_given(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "marker-key-135790")
    ordered = collections.OrderedDict(key="marker-key-135790", n=1)
    out = redact_value(ordered)
    assert type(out) is collections.OrderedDict and out == {"key": MASK, "n": 1}
    assert ordered["key"] == "marker-key-135790"  # a copy, not an edit
    nested = redact_value({"inner": collections.defaultdict(str, key="marker-key-135790")})
    assert type(nested["inner"]) is collections.defaultdict and nested["inner"]["key"] == MASK


def test_redact_value_refuses_a_str_subclass_it_cannot_keep_instead_of_leaking_it(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "marker-key-246801")

    class Note(str):
        pass

    assert redact_value(Note("nothing secret")) == "nothing secret"  # unchanged: the very same value
    with pytest.raises(TypeError, match="use redact"):
        redact_value(Note("ANTHROPIC_API_KEY=marker-key-246801"))


def test_an_event_is_redacted_in_its_fields_its_payload_and_its_raw_message(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "marker-gateway-5555")

    @dataclasses.dataclass
    class Raw:
        content: str

    raw = Raw(content="env: ANTHROPIC_AUTH_TOKEN=marker-gateway-5555")
    result = ToolResult(text="marker-gateway-5555", tool_use_id="toolu_1", raw=raw)
    call = ToolCall(text="x", tool="Bash", id="toolu_2", input={"command": "echo marker-gateway-5555"})
    for event in (redact_value(result), redact_value(call)):
        assert "marker-gateway-5555" not in repr(event) + repr(event.payload) + repr(event.raw)
    assert redact_value(call).payload["input"] == {"command": f"echo {MASK}"}
    assert result.text == "marker-gateway-5555" and raw.content.endswith("5555")  # values: copies, not edits
    clean = ToolResult(text="ok", tool_use_id="toolu_3")
    assert redact_value(clean) is clean


def test_the_logging_filter_masks_message_arguments_and_tracebacks(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "marker-log-24680")
    try:
        raise RuntimeError("failed with marker-log-24680")
    except RuntimeError:
        import sys

        record = logging.LogRecord(
            "flower", logging.WARNING, __file__, 1, "key %s", ("marker-log-24680",), sys.exc_info()
        )
    assert RedactingFilter().filter(record) is True
    text = logging.Formatter().format(record)
    assert "marker-log-24680" not in text
    assert text.startswith(f"key {MASK}\n") and f"RuntimeError: failed with {MASK}" in text


# (id, text, holds a credential): what hides a file from a confined command
HOLDS = [
    ("provider-key", "key: sk-ant-api03-Zq81xYb2Kc9dL0mN", True),
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n", True),
    ("assignment", 'db:\n  password: "Xk29!vQm"\n', True),
    ("netrc", "machine h login me password Vq8zK2mLp0", True),
    ("documentation", "export ANTHROPIC_API_KEY=sk-ant-...\nurl: postgresql://user:password@host/db", False),
    ("aws-example", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", False),
    ("placeholder", 'api_key: "<your key here>"\ntoken: "xxxxxxxxxxxx"', False),
    ("code", "def check(token: str) -> bool:\n    return token == expected", False),
]


@pytest.mark.parametrize(("text", "holds"), [h[1:] for h in HOLDS], ids=[h[0] for h in HOLDS])
def test_holds_secret_finds_credentials_and_not_their_documentation(text: str, holds: bool) -> None:
    assert secrets.holds_secret(text) is holds


def test_holds_secret_finds_a_known_value_anywhere_and_a_shape_deep_in_a_large_text(monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "plain-known-value-778")
    assert secrets.holds_secret("x" * 100 + " plain-known-value-778 " + "y" * 100)
    filler = "an ordinary line of a long log file, nothing to see\n" * 20_000
    assert secrets.holds_secret(filler + "GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n" + filler)
    assert not secrets.holds_secret(filler)
