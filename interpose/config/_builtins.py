"""The builder's steps for ``[hooks.builtins]``: the two guards and the policies."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ._builder import BuilderBase, seconds

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline
    from .schema import BuiltinsConfig

__all__ = ["BuiltinSteps"]


class BuiltinSteps(BuilderBase):
    """Registers the builtins a config enables, each at its priority and mode."""

    def guards(self, pipe: Pipeline, builtins: BuiltinsConfig) -> None:
        from ..middleware.builtins import builtin_interceptors

        safety, audit = builtins.command_safety_guard, builtins.security_audit
        where = "hooks.builtins."
        for name, rules in (
            ("command-safety-guard.deny", safety.deny),
            ("command-safety-guard.allow", safety.allow),
            ("security-audit.deny", audit.deny),
            ("security-audit.allow", audit.allow),
        ):
            self.regexes(where + name, rules)
        with self.at(where + "command-safety-guard.decisions"):
            regs = builtin_interceptors(
                command_deny=safety.deny,
                command_allow=safety.allow,
                path_deny=audit.deny,
                path_allow=audit.allow,
                command_decisions=safety.decisions,
            )
        command = (
            safety.enabled,
            self.builtin_priority("command-safety-guard", safety.priority),
            "command-safety-guard",
            safety.mode,
        )
        audit_settings = (
            audit.enabled,
            self.builtin_priority("security-audit", audit.priority),
            "security-audit",
            audit.mode,
        )
        # the command guard, the path guard, then the command guard's approver if it asks
        guards = (command, audit_settings, command)
        for reg, (enabled, priority, key, mode) in zip(regs, guards, strict=False):
            if enabled:
                with self.at(where + key):
                    pipe.registry.add(dataclasses.replace(reg, priority=priority, mode=mode))

    def policies(self, pipe: Pipeline, builtins: BuiltinsConfig) -> None:
        from ..middleware.builtins import (
            LoopGuard,
            OutputCap,
            Policy,
            RateLimit,
            RedactSecrets,
            ResultCache,
            ToolFilter,
        )
        from ..pipeline.redaction import Redactor

        where = "hooks.builtins."
        policy: Policy
        if builtins.tool_filter is not None and builtins.tool_filter.enabled:
            table = builtins.tool_filter
            allow = (
                None
                if table.allow is None
                else self.rules(where + "tool-filter.allow", table.allow, pipe)
            )
            deny = self.rules(where + "tool-filter.deny", table.deny, pipe)
            with self.at(where + "tool-filter"), self.moded(pipe, table.mode):
                policy = ToolFilter(
                    allow=allow,
                    deny=deny,
                    priority=self.builtin_priority("tool-filter", table.priority),
                )
                policy.install(pipe)
        if builtins.loop_guard is not None and builtins.loop_guard.enabled:
            guard = builtins.loop_guard
            tools = self.matcher(where + "loop-guard.tools", guard.tools, pipe)
            with self.at(where + "loop-guard"), self.moded(pipe, guard.mode):
                LoopGuard(
                    guard.max_repeats,
                    tools=tools,
                    max_turns=guard.max_turns,
                    priority=self.builtin_priority("loop-guard", guard.priority),
                ).install(pipe)
        if builtins.rate_limit is not None and builtins.rate_limit.enabled:
            rate = builtins.rate_limit
            tools = self.matcher(where + "rate-limit.tools", rate.tools, pipe)
            with self.at(where + "rate-limit"), self.moded(pipe, rate.mode):
                RateLimit(
                    rate.rate,
                    seconds(rate.per_ms),
                    burst=rate.burst,
                    tools=tools,
                    max_buckets=rate.max_buckets,
                    priority=self.builtin_priority("rate-limit", rate.priority),
                ).install(pipe)
        if builtins.redact_secrets is not None and builtins.redact_secrets.enabled:
            redact = builtins.redact_secrets
            self.regexes(where + "redact-secrets.patterns", redact.patterns)
            tools = self.matcher(where + "redact-secrets.tools", redact.tools, pipe)
            with self.at(where + "redact-secrets"), self.moded(pipe, redact.mode):
                RedactSecrets(
                    Redactor(redact.patterns, keys=redact.keys),
                    detect=redact.detect,
                    pii=redact.pii,
                    tools=tools,
                    priority=self.builtin_priority("redact-secrets", redact.priority),
                ).install(pipe)
        if builtins.result_cache is not None and builtins.result_cache.enabled:
            cache = builtins.result_cache
            cached = self.matcher(where + "result-cache.tools", cache.tools, pipe)
            invalidate = (
                self.matcher(where + "result-cache.invalidate_on", cache.invalidate_on, pipe)
                if cache.invalidate_on
                else None
            )
            with self.at(where + "result-cache"), self.moded(pipe, cache.mode):
                ResultCache(
                    seconds(cache.ttl_ms),
                    tools=cached if cached is not None else (),
                    invalidate_on=invalidate,
                    scope=cache.scope,
                    max_entries=cache.max_entries,
                    priority=self.builtin_priority("result-cache", cache.priority),
                ).install(pipe)
        if builtins.output_cap is not None and builtins.output_cap.enabled:
            cap = builtins.output_cap
            tools = self.matcher(where + "output-cap.tools", cap.tools, pipe)
            with self.at(where + "output-cap"), self.moded(pipe, cap.mode):
                OutputCap(
                    cap.max_chars,
                    marker=cap.marker,
                    strings_only=cap.strings_only,
                    tools=tools,
                    priority=self.builtin_priority("output-cap", cap.priority),
                ).install(pipe)
