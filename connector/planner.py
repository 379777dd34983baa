"""The driver side of a write, for every engine: what is checked and learnt once, before any worker writes.

Spark's data source (``spark/plan.py``) and Beam's sink (``beam/sink.py``) plan a write the same way,
on options parsed once and a client built on them:

1. the client checks what the backend knows without a call (hosts, keys, request limits, named
   vectors); the engine then checks what only it knows (Spark: the DataFrame's columns);
2. with an embedding stage, one probe request (``learn_model_dimension``): a bad key or an unknown
   model fails here, and the model's dimension becomes the write's;
3. the target is asked once (``ask_target``): reachable, credentials, dimension; ``create=true``
   makes it here, once; what it learnt (a collection id, "verified", each name's dimension) goes into
   the options the workers get, so each skips those calls.

The dimension rule: with ``create=true``, the vectors' length comes from the option, the model or the
target, never from the rows of whichever worker writes first (one short row would decide it for the
whole job). ``ask_target`` enforces it (``Client.prepare_target``); an engine that plans without
asking the target (Beam without ``check_target``) must be told the dimension (``require_dimension``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from .errors import ConfigError, DimensionMismatch
from .options import without_password

if TYPE_CHECKING:
    from .client import Client, TargetPrepared
    from .options import BackendOptions

__all__ = ["DriverPlan"]


class DriverPlan:
    """One write's driver side: ``options`` (what the workers get) and the ``client`` built on them."""

    def __init__(self, options: BackendOptions) -> None:
        from .client import Client

        self.options = options
        self.client: Client = Client(options)
        self._dimension_stated = options.dimension is not None  # given (or embed_dimensions), not learnt

    def __enter__(self) -> DriverPlan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    @property
    def target(self) -> str:
        """The target as messages name it (no credentials)."""
        return self.client.backend.describe()

    def learn_model_dimension(self, say: Callable[[str], None] | None = None) -> int | None:
        """With an embedding stage: one probe request (a bad key, an unknown model fail here); the
        model's dimension, checked against the write's (``dimension``, ``embed_dimensions``), becomes
        the write's. ``None`` without a stage."""
        stage = self.client.embedding
        if stage is None:
            return None
        try:
            dim = stage.probe()
        finally:
            stage.close()
        stated = self.options.dimension
        if stated is not None and stated != dim:
            given = "embed_dimensions" if self.options.embed_dimensions is not None else "dimension"
            raise ConfigError(
                f"option embed_model: {stage.options.model!r} answers {dim}-dimensional vectors, "
                f"not {stated} (option {given})"
            )
        if say is not None:
            endpoint = without_password(stage.options.endpoint)
            say(f"embedding with {stage.options.model!r} at {endpoint}: {dim}-dimensional vectors")
        learnt: dict[str, Any] = {} if stated is not None else {"dimension": dim}
        if stage.model_answered is not None:  # every task's replies must name it
            learnt["embed_model_answered"] = stage.model_answered
        if learnt:
            self._change(**learnt)
        return dim

    def ask_target(
        self, *, clear: bool = False, dense: bool = True, own_namespaces: bool = True
    ) -> TargetPrepared:
        """Check (with ``create=true`` make) the target, clear it when asked, and add what was learnt to
        ``options``; a target whose dimension is not the model's names the model. ``own_namespaces``: as
        ``Client.prepare_target``'s."""
        try:
            prepared = self.client.prepare_target(clear=clear, dense=dense, own_namespaces=own_namespaces)
        except DimensionMismatch as exc:
            if self.client.embedding is None:
                if self.options.dimension is None and not self.options.vector_dimensions:
                    raise
                raise self.client.stated_mismatch(exc) from None
            embedding = self.client.embedding
            raise embedding.mismatch(exc, self.options.dimension, stated=self._dimension_stated) from None
        if prepared.resolved:
            self.options = msgspec.structs.replace(self.options, **prepared.resolved)
        return prepared

    def require_dimension(self, how_to_ask: str) -> None:
        """For a plan that does not ask the target: with ``create=true`` the dimension must be stated
        (or come from the model); ``how_to_ask`` says how this engine would ask the target instead."""
        options = self.options
        if not options.create:
            return
        spec = self.client.spec
        if spec.named:
            names = [name for name, _ in (*spec.vector_columns, *spec.multi_vector_columns)]
            missing = [name for name in names if name not in (options.vector_dimensions or {})]
            if missing:
                raise ConfigError(
                    f"option vector_dimensions: with create=true, state the length of {', '.join(map(repr, missing))} "
                    f"(e.g. vector_dimensions='{missing[0]}:768'), or {how_to_ask} to learn them from the existing "
                    "target; otherwise the rows of whichever worker writes first would decide them for the whole job"
                )
        elif options.dimension is None and options.embed_url is None:
            raise ConfigError(
                "option dimension: with create=true, state the vectors' length (dimension=N), or "
                f"{how_to_ask} to learn it from the existing target; otherwise the rows of whichever "
                "worker writes first would decide the collection's dimension for the whole job"
            )

    def _change(self, **changes: Any) -> None:
        """Options changed by what the driver learnt; the client is made again on them (no call is made)."""
        from .client import Client

        self.options = msgspec.structs.replace(self.options, **changes)
        self.client.close()
        self.client = Client(self.options)
