"""A tracer provider that keeps its spans in memory, and a readable view of their tree."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode


@dataclass
class Recorder:
    """A provider to pass as ``Agent(tracer_provider=...)``, and the spans it finished."""

    provider: TracerProvider
    exporter: InMemorySpanExporter

    @classmethod
    def start(cls) -> Recorder:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(provider, exporter)

    def tree(self) -> Tree:
        """The spans finished so far, as a tree; exactly one root is expected."""
        return Tree(list(self.exporter.get_finished_spans()))

    def clear(self) -> None:
        self.exporter.clear()


@dataclass
class Tree:
    spans: list[ReadableSpan]

    @property
    def root(self) -> ReadableSpan:
        roots = [span for span in self.spans if span.parent is None]
        assert len(roots) == 1, [span.name for span in roots]
        return roots[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        """*parent*'s children, in the order they started."""
        assert parent.context is not None
        found = [
            span
            for span in self.spans
            if span.parent is not None and span.parent.span_id == parent.context.span_id
        ]
        return sorted(found, key=lambda span: span.start_time or 0)

    def named(self, name: str) -> list[ReadableSpan]:
        return sorted(
            (span for span in self.spans if span.name == name),
            key=lambda span: span.start_time or 0,
        )

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [span.name for span in self.spans])
        return found[0]

    def parent_of(self, span: ReadableSpan) -> ReadableSpan:
        assert span.parent is not None, span.name
        parents = [s for s in self.spans if s.context and s.context.span_id == span.parent.span_id]
        assert len(parents) == 1, span.name
        return parents[0]

    def outline(self, span: ReadableSpan | None = None, depth: int = 0) -> Iterator[str]:
        """The tree as indented span names, for an assertion message."""
        span = self.root if span is None else span
        yield "  " * depth + span.name
        for child in self.children(span):
            yield from self.outline(child, depth + 1)


def attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def is_error(span: ReadableSpan) -> bool:
    return span.status.status_code is StatusCode.ERROR
