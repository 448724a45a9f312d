"""bench.robustness --quick end to end: a served app without a model, its last line the JSON report.

The benchmark's own verdicts are asserted (no 5xx, no contract mismatch, every injected fault
survived), so a regression in hostile-input handling, the OpenAPI contract or the audit
verifier fails this test as it fails the benchmark.
"""

from __future__ import annotations

import json

import pytest

from bench.robustness import main

pytestmark = pytest.mark.slow


def test_quick_run_reports_no_5xx_no_mismatch_and_every_fault_survived(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # In this process: a python -m subprocess imported torch and spaCy again for one run.
    # The long-prefill case (a model server and a 4,000-token prompt: minutes on 2 cores) is left
    # out here; chunked prefill and the token limit have tests of their own.
    returned = main(["--quick", "--skip-long-prefill"])
    out = capsys.readouterr().out
    report = json.loads(out.strip().splitlines()[-1])
    assert report == returned
    assert {"hostile_cases", "five_xx", "contract_mismatches", "faults_injected",
            "faults_survived", "faults_skipped"} <= report.keys()
    assert report["quick"] is True
    assert report["hostile_cases"] > 0 and report["five_xx"] == 0, out[-3000:]
    assert report["contract_mismatches"] == 0, out[-3000:]
    # Audit tampering (3), a locked database and half-open connections need no privileges;
    # the unwritable-file refusals to start (3) are listed as skipped where they cannot be made.
    assert report["faults_injected"] + len(report["faults_skipped"]) == 8, report
    assert report["faults_injected"] >= 5
    assert report["faults_survived"] == report["faults_injected"], out[-3000:]
    # The hardening cases: nothing reaches out, a catastrophic regex freezes nothing, a restore
    # is on the record, dripped bodies are cut off as 499s, look-alike tenants are refused.
    hardening = report["hardening"]
    assert hardening["sparql_outside_refused"] == "6/6" and hardening["outside_calls"] == 0
    assert hardening["regex"]["upload_status"] == 201 and hardening["regex"]["evaluations"] > 0
    assert hardening["join"]["statuses"] == ["RuleTimeout"]  # stopped by the rule time limit
    assert report["healthz_max_ms"] < 2000  # a backtracking regex held the process for minutes
    assert hardening["restore_audited"] is True
    assert hardening["slow_bodies_closed"] == "20/20"
    assert set(hardening["slow_bodies_statuses"]) == {"499"}
    assert hardening["confusable_tenants_refused"] == "5/5"
    assert report["long_prefill"]["skipped"] is True
