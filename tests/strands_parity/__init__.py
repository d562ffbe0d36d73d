"""Strands Agents 1.62 middleware tests, ported to stageware (issue 7).

Strands Agents (strands-agents 1.62.0, Apache-2.0) ships its middleware tests in its source
distribution. Each module here rewrites one of them in this project's idiom against the
public ``stageware`` API only, keeping each test's scenario, its assertions and, where
possible, its function name:

========================================================  =================================
Strands 1.62 test module                                   port
========================================================  =================================
tests/strands/middleware/test_stages.py                    test_stages.py
tests/strands/middleware/test_registry.py                  test_registry.py
tests/strands/middleware/test_agent_middleware.py          test_agent_middleware.py
tests/strands/middleware/test_execute_tool_middleware.py   test_execute_tool_middleware.py
tests/strands/middleware/test_middleware_interrupts.py     test_middleware_interrupts.py
tests/strands/middleware/test_agent_stream_middleware.py   test_agent_stream_stage.py
tests_typing/test_middleware.py                            test_typing.py
========================================================  =================================

Each module's docstring says how Strands' fixtures map to stageware's ``Agent``,
``ScriptedModel`` and ``MiddlewareRegistry``, and lists the tests of its Strands module that
do not apply. Stageware keeps three deliberate differences, asserted as stageware behaves
and marked ``# Deliberate difference (issue 7)``: ``registry.invoke()`` raises
``RuntimeError`` for a chain with neither a result nor an interrupt; replacing
``cancel_signal`` with ``dataclasses.replace`` is refused; ``AgentStreamStage`` is public.

Other Strands 1.62 tests that mention middleware, and why they are not ported:

- tests/strands/agent/conversation_manager/test_token_usage_middleware.py: Strands'
  token-usage conversation manager; stageware's managers (``stageware.middleware``'s
  ``SlidingWindow`` and ``Summarizing``) are its own, tested in
  tests/middleware/test_conversation_*.py.
- tests/strands/models/routing/test_router.py: Strands' ``ModelRouter`` product, built on
  InvokeModelStage; not part of stageware or its spec.
- tests/strands/memory/test_memory_manager.py, tests/strands/vended_memory_stores/**,
  tests_integ/memory/**: Strands' memory manager and stores (Bedrock knowledge bases).
- tests/strands/injection/test_message_injection.py: Strands' message-injection primitives.
- tests/strands/background_tasks/**: Strands' background tool tasks.
- tests/strands/vended_plugins/context_injector/test_plugin.py: a Strands vended plugin
  (stageware has no plugin system).
- tests/strands/agent/test_agent_delegation.py: Strands' agent delegation feature.
- tests/strands/tools/executors/test_executor.py (the two middleware tests): they test the
  private ``ToolExecutor._stream_with_trace`` against mocked OpenTelemetry spans.
- tests/strands/event_loop/test_event_loop*.py, tests/strands/tools/executors/conftest.py:
  they only give mocked agents an empty private registry; no middleware behaviour.
- tests/strands/tools/mcp/test_mcp_instrumentation_v2.py: "middleware" of MCP servers, in
  a docstring only.
"""
