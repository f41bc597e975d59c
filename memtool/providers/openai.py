"""A compressor on any OpenAI-compatible chat endpoint, through the official `openai` SDK: OpenAI,
Ollama (`http://127.0.0.1:11434/v1`), llama.cpp's server, vLLM, LM Studio and hosted gateways.

Settings: `openai_base_url` (empty: api.openai.com), `openai_model`, `openai_timeout_s`,
`openai_max_retries`, `openai_window_chars`; the key comes from OPENAI_API_KEY (a local server given
by `openai_base_url` needs none). Same schema, prompts, split and merge as the Gemini compressor
(memtool.providers.gemini_schema); the answer is asked for as a JSON object, which every one of those
servers supports. The SDK's own retries are off: 429 / 5xx / 408 / timeouts are retried here with a
bounded back-off, and every failure is a memtool ProviderError whose message never holds the key, so
`memory compress` stores the local stand-in marked pending and `memory retry` completes it.
`openai` is imported on the first request; without it the error names the extra (memtool.extras).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from memtool import constants as C
from memtool.errors import BadModelOutput, ConfigError, MissingCredentials, ProviderError, ProviderTimeout, RateLimited
from memtool.providers import gemini_schema as S

if TYPE_CHECKING:
    from memtool.config import Settings

T = TypeVar("T")
RETRYABLE = {408, 409, 429, 500, 502, 503, 504}
NO_KEY = "not-needed"  # what a local server that wants no key is sent (the SDK requires a value)
LABEL = "OpenAI-compatible model"


def _sdk():
    from memtool.extras import require

    require("openai", "The openai compressor")
    import openai

    return openai


def _schema_text() -> str:
    """ENTRY_SCHEMA as a JSON Schema with lower-case types, for the system prompt."""

    def plain(node: dict[str, Any]) -> dict[str, Any]:  # json.loads calls it on each object, innermost first
        return {k: (v.lower() if k == "type" and isinstance(v, str) else v) for k, v in node.items() if k != "propertyOrdering"}

    return json.dumps(json.loads(json.dumps(S.ENTRY_SCHEMA), object_hook=plain), separators=(",", ":"))


class OpenAICompressor(S.WindowedCompressor):
    """One chat completion per window of transcript, answered as a JSON object; parts are merged."""

    name = "openai"
    who = f"The {LABEL}"
    part_call = "chat completion"

    def __init__(
        self,
        api_key: str,
        model: str,
        *,
        base_url: str = "",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        window_chars: int = C.DEFAULT_OPENAI_WINDOW_CHARS,
        retry_base_delay: float = S.RETRY_BASE_DELAY_S,
        max_summary_chars: int = S.DEFAULT_MAX_SUMMARY_CHARS,
    ):
        if timeout_s <= 0:
            raise ConfigError("openai_timeout_s must be positive")
        if window_chars < 1:
            raise ConfigError(f"openai_window_chars must be positive, got {window_chars}")
        if not model.strip():
            raise ConfigError("the openai compressor needs a model: set openai_model (e.g. gpt-4o-mini, or llama3.1 for Ollama)")
        self._key = api_key
        self.model, self.base_url = model, base_url
        self.timeout_s, self.max_retries = float(timeout_s), max(0, int(max_retries))
        self.window_chars, self.retry_base_delay, self.max_summary_chars = window_chars, retry_base_delay, max_summary_chars
        self._client: Any = None

    @classmethod
    def from_settings(cls, settings: "Settings", root: Path, *, retry_base_delay: float = S.RETRY_BASE_DELAY_S) -> "OpenAICompressor":
        return cls(
            api_key_from_env(settings.openai_base_url),
            settings.openai_model,
            base_url=settings.openai_base_url,
            timeout_s=settings.openai_timeout_s,
            max_retries=settings.openai_max_retries,
            window_chars=settings.openai_window_chars,
            retry_base_delay=retry_base_delay,
        )

    def __repr__(self) -> str:
        return f"OpenAICompressor(model={self.model!r}, base_url={self.base_url or 'default'!r})"

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _sdk().OpenAI(api_key=self._key, base_url=self.base_url or None, timeout=self.timeout_s, max_retries=0)
        return self._client

    def scrub(self, text: str) -> str:
        return text.replace(self._key, "[REDACTED]") if self._key and self._key != NO_KEY else text

    def _generate(self, text: str, instruction: str, schema: dict[str, Any], what: str) -> dict[str, Any]:
        """The schema goes in the prompt: a JSON object is all every OpenAI-compatible server can be asked for."""
        instruction += f" The JSON Schema of the answer: {_schema_text()}" if schema is S.ENTRY_SCHEMA else ' Answer {"summary": "..."}.'
        resp = self._call(
            what,
            lambda: self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": instruction}, {"role": "user", "content": text}],
                response_format={"type": "json_object"},
                temperature=0.2,
            ),
        )
        choice = resp.choices[0] if resp.choices else None
        if choice is not None and choice.finish_reason == "length":
            raise BadModelOutput(f"the {LABEL}'s answer was cut off (finish reason: length); nothing was stored. Lower openai_window_chars.")
        content = choice.message.content if choice is not None else None
        try:
            return S.parse_json_object(content, f"{what} answer", self.who)
        except BadModelOutput as exc:  # the message quotes the answer, which could echo the key
            raise BadModelOutput(self.scrub(str(exc))) from None

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """One request with bounded exponential back-off; failures become memtool errors."""
        openai = _sdk()
        where = self.base_url or "api.openai.com"

        def failure(exc: Any, attempt: int) -> tuple[str | None, ProviderError]:
            if isinstance(exc, openai.APIStatusError):
                code = exc.status_code
                return (f"HTTP {code}" if code in RETRYABLE else None), self._status_error(what, code, exc, attempt)
            if isinstance(exc, openai.APITimeoutError):
                return "timeout", ProviderTimeout(
                    f"{LABEL} {what}: no answer from {where} within {self.timeout_s:g} s ({attempt} attempt(s)). "
                    "Raise openai_timeout_s, or try again later with `memory retry`."
                )
            if isinstance(exc, openai.APIConnectionError):
                return "connection error", ProviderError(
                    f"{LABEL} {what}: cannot reach {where} ({type(exc.__cause__ or exc).__name__}, {attempt} attempt(s)). "
                    "Is the server running? Check openai_base_url."
                )
            return None, ProviderError(f"{LABEL} {what}: the answer of {where} is not a chat completion; is openai_base_url right?")

        catch = (openai.APIStatusError, openai.APIConnectionError, openai.APIResponseValidationError)
        return S.call_with_retries(fn, catch, failure, label=LABEL, what=what, retries=self.max_retries, base_delay=self.retry_base_delay)

    def _status_error(self, what: str, code: int, exc: Any, attempt: int) -> ProviderError:
        detail = self.scrub(" ".join(str(getattr(exc, "message", "") or exc).split()))[:300]
        head = f"{LABEL} {what}: HTTP {code} after {attempt} attempt(s)"
        if code == 429:
            return RateLimited(f"{head}: rate limit or quota reached ({detail}). Nothing is lost: run `memory retry` later.")
        if code in (408, 504):
            return ProviderTimeout(f"{head}: the request timed out ({detail}). Try again later with `memory retry`.")
        if code in (401, 403):
            return MissingCredentials(f"{head}: the key was rejected ({detail}). Check {C.OPENAI_KEY_VAR}.")
        if code == 404:
            return ProviderError(f"{head}: not found ({detail}). Check openai_model and openai_base_url.")
        if code >= 500:
            return ProviderError(f"{head}: server error ({detail}). Try again later with `memory retry`.")
        return ProviderError(f"{head}: request rejected ({detail}).")


def api_key_from_env(base_url: str = "", env: "os._Environ[str] | dict[str, str] | None" = None) -> str:
    """OPENAI_API_KEY; a server named by openai_base_url (Ollama, llama.cpp, vLLM, LM Studio) may need none."""
    env = os.environ if env is None else env
    key = (env.get(C.OPENAI_KEY_VAR) or "").strip()
    if key:
        return key
    if base_url:
        return NO_KEY
    raise MissingCredentials(
        f"the openai compressor needs an API key for api.openai.com: set {C.OPENAI_KEY_VAR}, or set openai_base_url "
        "to a local server (e.g. http://127.0.0.1:11434/v1 for Ollama), or use compressor: local."
    )
