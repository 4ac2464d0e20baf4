from flower.core.secrets import MASK, redact


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
