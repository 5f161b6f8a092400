"""``builtin:redact-secrets`` with the detector of interpose.secrets: nested results, MCP
content, PII when configured, counts per kind in details and on the span."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import msgspec
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from interpose import Pipeline
from interpose.errors import ConfigError
from interpose.middleware.builtins import RedactSecrets

# fakes in the shapes the old key-name/pattern redactor did not know (built, not literal)
SENDGRID = "SG." + "aB3dE6gH9jK2mN5pQ8sT1v" + "." + "wX4zA7cD0fG3hJ6kL9nP2rS5uV8yB1eF4iM7oQ0tW3x"
NPM = "npm_" + "k8Lq2Zr7Tb4Wc9Vd1Xe6Yf3Ug5Sh0Ri2Pj8M"  # 36 after the prefix
AZURE = "AccountKey=" + "Zm9vYmFy" * 10 + "Qk1xY2" + "=="  # 86 + "=="
PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBq7Zx2Lk9\n-----END EC PRIVATE KEY-----"
URL = "postgres://app:Tr0ub4dor-x9@db.internal:5432/app"


def returning(output: Any) -> Any:
    def tool(args: dict[str, Any]) -> Any:
        return output

    return tool


async def test_secrets_the_key_names_miss_are_masked_by_their_shape(pipe: Pipeline) -> None:
    RedactSecrets().install(pipe)
    text = f"sendgrid {SENDGRID}\nnpm {NPM}\n{AZURE};\n{PEM}\nurl {URL}"

    result = await pipe.call_tool("read", {"path": "notes"}, call=returning(text))

    assert result.output == (
        "sendgrid [REDACTED]\nnpm [REDACTED]\nAccountKey=[REDACTED];\n[REDACTED]\n"
        "url postgres://app:[REDACTED]@db.internal:5432/app"
    )
    assert result.details["redacted"] == 5
    assert result.details["redacted_kinds"] == {
        "azure-storage-key": 1,
        "npm": 1,
        "private-key": 1,
        "sendgrid": 1,
        "url-password": 1,
    }


async def test_mcp_content_text_is_masked_and_image_data_left_alone(pipe: Pipeline) -> None:
    RedactSecrets().install(pipe)
    image = base64.b64encode(b"\x89PNG" + bytes(range(256)) * 4).decode()
    output: dict[str, Any] = {
        "content": [
            {"type": "text", "text": f"deploy key: {NPM}"},
            {"type": "image", "data": image, "mimeType": "image/png"},
        ],
        "structuredContent": {"config": {"db": URL}},
        "isError": False,
    }

    result = await pipe.call_tool("mcp__files__read", {}, call=returning(output))

    assert result.output["content"][0] == {"type": "text", "text": "deploy key: [REDACTED]"}
    assert result.output["content"][1] is output["content"][1]  # not walked, not copied
    assert result.output["structuredContent"] == {
        "config": {"db": "postgres://app:[REDACTED]@db.internal:5432/app"}
    }
    assert result.details["redacted_kinds"] == {"npm": 1, "url-password": 1}
    assert NPM in output["content"][0]["text"]  # the tool's own object is untouched


async def test_structs_and_tuples_are_walked(pipe: Pipeline) -> None:
    class Row(msgspec.Struct):
        name: str
        note: str

    RedactSecrets().install(pipe)
    output = (Row("a", "clean"), Row("b", f"token {NPM}"))

    result = await pipe.call_tool("query", {}, call=returning(output))

    assert result.output == [output[0], {"name": "b", "note": "token [REDACTED]"}]
    assert result.output[0] is output[0]


async def test_personal_data_is_left_unless_configured(pipe: Pipeline) -> None:
    text = "from mallory@evil.example: wire to DE89 3704 0044 0532 0130 00, call +1 415 555 2671"
    RedactSecrets(id="secrets-only").install(pipe)
    RedactSecrets(pii=["email", "iban"], id="with-pii", priority=50).install(pipe)

    result = await pipe.call_tool("read_inbox", {}, call=returning(text))

    assert result.output == "from [REDACTED]: wire to [REDACTED], call +1 415 555 2671"
    assert result.details["redacted_kinds"] == {"email": 1, "iban": 1}


async def test_pii_true_masks_every_kind(pipe: Pipeline) -> None:
    RedactSecrets(pii=True).install(pipe)
    text = "card 4111 1111 1111 1111, ssn 536-22-8419, mail bob@example.com"

    result = await pipe.call_tool("read", {}, call=returning(text))

    assert result.output == "card [REDACTED], ssn [REDACTED], mail [REDACTED]"
    assert result.details["redacted_kinds"] == {"card": 1, "email": 1, "us-ssn": 1}


async def test_detection_can_be_switched_off(pipe: Pipeline) -> None:
    RedactSecrets(detect=False).install(pipe)

    result = await pipe.call_tool("read", {}, call=returning(f"sendgrid {SENDGRID}"))

    assert result.output == f"sendgrid {SENDGRID}"  # the key-name redactor alone
    assert "redacted" not in result.details


def test_an_unknown_pii_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="pii: unknown PII kinds \\['postcode'\\]"):
        RedactSecrets(pii=["email", "postcode"])


async def test_the_span_says_how_many_and_which_kinds_never_the_values(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    pipe = Pipeline(builtins=False, tracer_provider=provider)
    RedactSecrets().install(pipe)

    await pipe.call_tool("read", {}, call=returning({"a": NPM, "b": [URL, {"password": "x1"}]}))

    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool read"]
    attributes: Any = span.attributes
    assert attributes["interpose.redacted"] == 3
    assert list(attributes["interpose.redacted.kinds"]) == [
        "npm",
        "sensitive-key",
        "url-password",
    ]
    assert all(NPM not in str(value) for value in attributes.values())


async def test_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "interpose.toml"
    path.write_text(
        '[hooks.builtins.redact-secrets]\npii = ["email"]\n',
        encoding="utf-8",
    )
    pipe = Pipeline.from_config(path)

    result = await pipe.call_tool(
        "read", {"path": "a"}, call=returning(f"ops@corp.example {NPM} +1 415 555 2671")
    )

    assert result.output == "[REDACTED] [REDACTED] +1 415 555 2671"
    assert result.details["redacted_kinds"] == {"email": 1, "npm": 1}


def test_a_bad_pii_kind_in_the_config_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "interpose.toml"
    path.write_text('[hooks.builtins.redact-secrets]\npii = ["postcode"]\n', encoding="utf-8")

    with pytest.raises(ConfigError, match="pii"):
        Pipeline.from_config(path)
