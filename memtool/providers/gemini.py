"""Gemini compressor, embedder and token counter on the official `google-genai` SDK.

`google.genai` is imported only when the first request is made (it costs ~0.5 s), so building
these objects or importing this module never pays for it. The SDK's own retries are switched off;
`GeminiClient.call` retries 429 / 5xx / 408 / timeouts (gemini_schema.call_with_retries) and
translates failures into memtool errors whose messages never contain the API key.
"""

from __future__ import annotations

import importlib
import os
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np

from memtool import constants as C
from memtool.errors import BadModelOutput, ConfigError, DimensionMismatch, MissingCredentials, ProviderError, ProviderTimeout, RateLimited
from memtool.providers import gemini_schema as S

if TYPE_CHECKING:
    from memtool.config import Settings

T = TypeVar("T")

EMBED_BATCH = 100  # batchEmbedContents accepts at most 100 requests
RETRYABLE = {408, 429, 500, 502, 503, 504}


def api_key_from_env() -> tuple[str, str]:
    """(variable name, key) from GEMINI_API_KEY or GOOGLE_API_KEY, in that order."""
    for var in C.GEMINI_KEY_VARS:
        key = os.environ.get(var, "").strip()
        if key:
            return var, key
    raise MissingCredentials(
        f"Gemini needs an API key: set {C.GEMINI_KEY_VARS[0]} or {C.GEMINI_KEY_VARS[1]} "
        "(create one at https://aistudio.google.com/apikey), or use the offline providers "
        "(compressor: local, embedder: wordllama)."
    )


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, other transport errors) of whichever of httpx / httpx2 the SDK may use."""
    mods = [importlib.import_module(name) for name in ("httpx2", "httpx") if find_spec(name)]
    return tuple(m.TimeoutException for m in mods), tuple(m.TransportError for m in mods)


class GeminiClient:
    """One `genai.Client` with bounded retries and key-safe error translation."""

    def __init__(
        self,
        api_key: str,
        key_var: str = "",
        *,
        base_url: str = "",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        retry_base_delay: float = S.RETRY_BASE_DELAY_S,
    ):
        if timeout_s <= 0:
            raise ProviderError("gemini_timeout_s must be positive")
        self._key = api_key
        self.key_var = key_var or "the API key"
        self.base_url = base_url
        self.timeout_s = float(timeout_s)
        self.max_retries = max(0, int(max_retries))
        self.retry_base_delay = retry_base_delay
        self._sdk: Any = None

    def __repr__(self) -> str:
        return f"GeminiClient(base_url={self.base_url or 'default'!r}, timeout_s={self.timeout_s})"

    @property
    def models(self) -> Any:
        """The SDK's `client.models`, built (and google.genai imported) on first use."""
        if self._sdk is None:
            from google import genai
            from google.genai import types

            http = types.HttpOptions(
                timeout=max(1, round(self.timeout_s * 1000)),  # HttpOptions.timeout is in milliseconds
                retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours, see call()
                base_url=self.base_url or None,
            )
            self._sdk = genai.Client(api_key=self._key, vertexai=False, http_options=http)
        return self._sdk.models

    def scrub(self, text: str) -> str:
        return text.replace(self._key, "[REDACTED]") if self._key else text

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one SDK call with bounded exponential back-off; raise memtool errors only."""
        from google.genai import errors as genai_errors

        timeouts, transport = _transport_errors()

        def failure(exc: Any, attempt: int) -> tuple[str | None, ProviderError]:
            if isinstance(exc, genai_errors.APIError):
                code = exc.code if isinstance(exc.code, int) else 0
                return (f"HTTP {code}" if code in RETRYABLE else None), self._api_error(what, exc, attempt)
            if isinstance(exc, timeouts):
                return "timeout", ProviderTimeout(
                    f"Gemini {what}: no answer within {self.timeout_s:g} s ({attempt} attempt(s)). "
                    "Raise gemini_timeout_s, or try again later with `memory retry`."
                )
            if isinstance(exc, transport):
                return type(exc).__name__, ProviderError(
                    f"Gemini {what}: cannot reach {self.base_url or 'the Gemini API'} "
                    f"({type(exc).__name__}, {attempt} attempt(s)). Check the network or gemini_base_url."
                )
            return None, ProviderError(f"Gemini {what}: the server's answer is not JSON; is gemini_base_url right?")

        catch = (genai_errors.APIError, *timeouts, *transport, genai_errors.UnknownApiResponseError)
        return S.call_with_retries(fn, catch, failure, label="Gemini", what=what, retries=self.max_retries, base_delay=self.retry_base_delay)

    def _api_error(self, what: str, exc: Any, attempt: int) -> ProviderError:
        code, status = exc.code, exc.status or ""
        detail = self.scrub(" ".join(str(exc.message or "").split()))[:300]
        head = f"Gemini {what}: HTTP {code} {status}".rstrip() + f" after {attempt} attempt(s)"
        if code == 429:
            return RateLimited(
                f"{head}: quota or rate limit reached ({detail}). Nothing is lost: wait a few minutes "
                "and run `memory retry`, or check your quota at https://aistudio.google.com."
            )
        if code in (408, 504):
            return ProviderTimeout(f"{head}: the request timed out ({detail}). Try again later with `memory retry`.")
        if code in (401, 403) or "API key" in detail or "API_KEY" in str(getattr(exc, "details", "")):
            return MissingCredentials(f"{head}: the key in {self.key_var} was rejected ({detail}). Check it.")
        if code == 404:
            return ProviderError(f"{head}: not found ({detail}). Check gemini_model / gemini_embed_model.")
        if isinstance(code, int) and code >= 500:
            return ProviderError(f"{head}: server error ({detail}). Try again later with `memory retry`.")
        return ProviderError(f"{head}: request rejected ({detail}).")


def _client(settings: "Settings", retry_base_delay: float) -> GeminiClient:
    from memtool.extras import require

    require("gemini", "The Gemini provider")
    var, key = api_key_from_env()
    return GeminiClient(
        key,
        var,
        base_url=settings.gemini_base_url,
        timeout_s=settings.gemini_timeout_s,
        max_retries=settings.gemini_max_retries,
        retry_base_delay=retry_base_delay,
    )


class GeminiTokenCounter:
    """Exact token counts from the model's `countTokens` endpoint (one request per call)."""

    def __init__(self, client: GeminiClient, model: str):
        self.client, self.model = client, model

    def count_tokens(self, text: str) -> int:
        resp = self.client.call("countTokens", lambda: self.client.models.count_tokens(model=self.model, contents=text))
        if not isinstance(resp.total_tokens, int):
            raise BadModelOutput(f"Gemini countTokens for {self.model} returned no token count.")
        return resp.total_tokens


class GeminiCompressor(S.WindowedCompressor, GeminiTokenCounter):
    """One structured-output `generateContent` call per window of transcript; parts are merged.
    Counts tokens as its model does (GeminiTokenCounter)."""

    name = "gemini"

    def __init__(
        self,
        client: GeminiClient,
        model: str = C.DEFAULT_GEMINI_MODEL,
        *,
        window_chars: int = S.DEFAULT_WINDOW_CHARS,
        window_tokens: int | None = None,
        max_summary_chars: int = S.DEFAULT_MAX_SUMMARY_CHARS,
    ):
        self.client, self.model = client, model
        self.window_chars, self.window_tokens = window_chars, window_tokens
        self.max_summary_chars = max_summary_chars
        self.scrub = client.scrub

    @classmethod
    def from_settings(cls, settings: "Settings", root: Path, *, retry_base_delay: float = S.RETRY_BASE_DELAY_S) -> "GeminiCompressor":
        if settings.gemini_window_chars < 1:
            raise ConfigError(f"gemini_window_chars must be positive, got {settings.gemini_window_chars}")
        return cls(_client(settings, retry_base_delay), settings.gemini_model, window_chars=settings.gemini_window_chars)

    def __repr__(self) -> str:
        return f"GeminiCompressor(model={self.model!r}, client={self.client!r})"

    def _window(self, text: str) -> int:
        """Max chars per part: window_chars, tightened by counted tokens when window_tokens is set."""
        limit = self.window_chars
        if self.window_tokens and len(text) > self.window_tokens:  # a token is at least one char
            tokens = self.count_tokens(text)
            if tokens > self.window_tokens:
                limit = min(limit, max(1, int(len(text) * self.window_tokens / tokens * 0.9)))
        return limit

    def _generate(self, text: str, instruction: str, schema: dict[str, Any], what: str) -> dict[str, Any]:
        from google.genai import types

        config = types.GenerateContentConfig(
            system_instruction=instruction,
            response_mime_type="application/json",
            response_schema=schema,
            temperature=0.2,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            automatic_continuation=False,  # exactly one request per part; a cut answer is an error
        )
        resp = self.client.call(what, lambda: self.client.models.generate_content(model=self.model, contents=text, config=config))
        finish = resp.candidates[0].finish_reason if resp.candidates else None
        reason = str(getattr(finish, "value", finish) or "none")
        try:
            return S.parse_json_object(resp.text, f"{what} answer")
        except BadModelOutput as exc:  # the message quotes the answer, which could echo the key
            raise BadModelOutput(f"{self.client.scrub(str(exc))} Finish reason: {reason}.") from None


class GeminiEmbedder:
    """`batchEmbedContents` in batches of EMBED_BATCH; rows are float32 and L2-normalised."""

    name = "gemini"
    semantic_weight = C.NO_SEMANTIC_WEIGHT
    reason: str | None = None  # it runs wherever it is installed

    def __init__(self, client: GeminiClient, model: str = C.DEFAULT_GEMINI_EMBED_MODEL, dim: int = C.DEFAULT_GEMINI_EMBED_DIM):
        if dim < 1:
            raise ProviderError(f"gemini_embed_dim must be positive, got {dim}")
        self.client, self.model, self.dim = client, model, int(dim)

    @classmethod
    def from_settings(cls, settings: "Settings", root: Path, *, retry_base_delay: float = S.RETRY_BASE_DELAY_S) -> "GeminiEmbedder":
        return cls(_client(settings, retry_base_delay), settings.gemini_embed_model, settings.gemini_embed_dim)

    def __repr__(self) -> str:
        return f"GeminiEmbedder(model={self.model!r}, dim={self.dim}, client={self.client!r})"

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = [self._embed(texts[i : i + EMBED_BATCH], "RETRIEVAL_DOCUMENT") for i in range(0, len(texts), EMBED_BATCH)]
        return np.concatenate(rows)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "RETRIEVAL_QUERY")[0]

    def _embed(self, texts: list[str], task_type: str) -> np.ndarray:
        from google.genai import types

        config = types.EmbedContentConfig(task_type=task_type, output_dimensionality=self.dim)
        resp = self.client.call(
            "batchEmbedContents",
            lambda: self.client.models.embed_content(model=self.model, contents=texts, config=config),
        )
        vectors = [e.values or [] for e in (resp.embeddings or [])]
        if len(vectors) != len(texts):
            raise BadModelOutput(f"Gemini {self.model} returned {len(vectors)} embeddings for {len(texts)} texts.")
        dims = sorted({len(v) for v in vectors})
        if dims != [self.dim]:
            raise DimensionMismatch(
                f"Gemini {self.model} returned {'/'.join(map(str, dims))}-dim vectors, expected gemini_embed_dim={self.dim}. "
                "Set gemini_embed_dim to a size the model supports (e.g. 768, 1536, 3072)."
            )
        arr = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.where(norms > 0, norms, 1.0)
