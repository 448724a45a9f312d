// The console's wiring: forms -> API calls -> panels. One run at a time.
import { ApiError, call, postStream, storeKey, storedKey } from "/console/api.js";
import {
  drawConfidenceChart, drawConstraintGraph, drawDag, drawEvidence, edgesOf, nodeCount, nodesOf,
} from "/console/graphs.js";

const $ = (id) => document.getElementById(id);
const state = { sessionId: null, sessionDomain: null, steps: [], constraintGraph: null };

function setStatus(text, isError = false) {
  const el = $("status");
  el.textContent = text;
  el.className = isError ? "error" : "muted";
}

function item(text, className) {
  const li = document.createElement("li");
  li.textContent = text;
  if (className) li.className = className;
  return li;
}

function button(text, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.addEventListener("click", onClick);
  return b;
}

function reportError(error) {
  setStatus(error instanceof ApiError ? error.message : `Error: ${error.message || error}`, true);
}

// --- rendering -------------------------------------------------------------------------

function resetRun() {
  state.steps = [];
  $("answer").textContent = "";
  $("run-id").textContent = "";
  renderDecision(null);
  $("steps").replaceChildren();
  $("constraints").replaceChildren();
  $("confidence-chart").replaceChildren();
  $("provenance").textContent = "";
}

function addStep(step) {
  state.steps.push(step);
  const li = item(step.text);
  li.dataset.stepId = step.id;
  // What the sentence is (decision, grounds, supported, flagged) and what supports it.
  if (step.kind) {
    li.classList.add(`kind-${step.kind}`);
    const kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = step.kind + (step.support && step.support.length ? ` [${step.support.join(", ")}]` : "");
    li.prepend(kind);
  }
  const conf = document.createElement("span");
  conf.className = "conf";
  const scored = typeof step.confidence === "number";
  conf.textContent = `${step.id} · ${scored ? step.confidence.toFixed(2) : "decided, scoring…"}` +
    (step.calibration_hint ? ` · ${step.calibration_hint}` : "");
  li.appendChild(conf);
  $("steps").appendChild(li);
  drawConfidenceChart($("confidence-chart"), state.steps.filter((s) => typeof s.confidence === "number"));
}

function verdictMap(constraints) {
  return new Map(constraints.map((c) => [c.id, c.verdict]));
}

function renderConstraints(constraints) {
  $("constraints").replaceChildren(...constraints.map((c) => {
    const verdict = c.verdict == null ? "unknown" : c.verdict.satisfied ? "satisfied" : "violated";
    const cls = { satisfied: "ok", violated: "bad", unknown: "unk" }[verdict];
    return item(`${c.id} ${c.kind} ${JSON.stringify(c.params)} — ${verdict}`, cls);
  }));
  if (state.constraintGraph) drawConstraintGraph(state.constraintGraph, verdictMap(constraints));
}

function renderEvidence(evidence, decision = null) {
  const legend = drawEvidence(evidence, decision);
  $("evidence-legend").replaceChildren(...legend.map((entry) => {
    const li = item(entry.text);
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = entry.colour;
    li.prepend(swatch);
    return li;
  }));
}

/** The decision of the domain's rules, first: status, statement, each conclusion with its
 * rule, cited evidence ids and the request's words that fired it, and any missing input. */
function renderDecision(decision) {
  const box = $("decision");
  box.hidden = !decision;
  if (!decision) return;
  const tag = $("decision-status");
  tag.textContent = decision.status;
  tag.className = `status-tag ${decision.status}`;
  $("decision-statement").textContent = decision.statement;
  const rows = decision.conclusions.map((c) => {
    const li = item("", "conclusion");
    const rule = document.createElement("strong");
    rule.textContent = c.rule_id;
    li.append(rule, ` ${c.statement}`);
    if (c.evidence_ids.length) li.append(` [${c.evidence_ids.join(", ")}]`);
    const words = [...new Set(c.case_facts.filter((f) => f.span).map((f) => f.span.text))];
    if (words.length) {
      const why = document.createElement("div");
      why.className = "muted";
      why.textContent = `fired by: ${words.map((w) => `«${w}»`).join("; ")}`;
      li.appendChild(why);
    }
    return li;
  });
  decision.missing.forEach((m) => {
    rows.push(item(`missing: ${m.label} (${m.rule_ids.join(", ")})`, "missing"));
    (m.outcomes || []).forEach((o) => rows.push(item(o.statement, "muted")));
  });
  if (decision.nearest) rows.push(item(`why not: ${decision.nearest.statement}`, "missing"));
  $("conclusions").replaceChildren(...rows);
}

/** The full `POST /v1/reason` body (also a session turn's `response`). */
async function renderResult(result) {
  $("run-id").textContent = result.run_id;
  renderDecision(result.decision || null);
  $("answer").textContent = result.status === "ok" ? result.answer
    : `${result.status}${result.detail ? `: ${result.detail}` : ""}`;
  // The streamed steps were provisional (decided, not yet scored): show the scored ones.
  state.steps = [];
  $("steps").replaceChildren();
  result.steps.forEach(addStep);
  renderConstraints(result.constraints);
  renderEvidence(result.evidence, result.decision || null);
  if (result.status === "needs_confirmation") await loadConfirmations();
  await loadProvenance(result.run_id);
}

async function loadProvenance(runId) {
  try {
    $("provenance").textContent = await call("GET", `/v1/runs/${encodeURIComponent(runId)}/provenance?format=provn`);
  } catch (error) {
    $("provenance").textContent = `(provenance unavailable: ${error.message})`;
  }
}

// --- constraint graph ------------------------------------------------------------------

async function loadConstraintGraph(prompt, domain) {
  const body = { prompt, graph_format: "json" };
  if (domain) body.domain = domain;
  const analysis = await call("POST", "/v1/constraints", body);
  state.constraintGraph = analysis.graph;
  drawConstraintGraph(analysis.graph, new Map());
}

// --- one-shot runs (streamed) ----------------------------------------------------------

async function reasonStreamed(prompt, domain, maxNewTokens) {
  const body = { prompt, options: { stream: true, max_new_tokens: maxNewTokens } };
  if (domain) body.domain = domain;
  let result = null;
  await postStream("/v1/reason", body, (event, data) => {
    if (event === "plan") {
      $("run-id").textContent = data.run_id;
      setStatus(`Planned ${data.constraints.length} constraints; decoding…`);
      renderConstraints(data.constraints);
    } else if (event === "step") {
      addStep(data);
      setStatus(`Step ${data.id} received`);
    } else if (event === "result") {
      result = data;
    }
  });
  if (!result) throw new Error("the stream ended without a result");
  await renderResult(result);
  return result;
}

// --- sessions ----------------------------------------------------------------------------

async function ensureSession(domain) {
  if (state.sessionId && state.sessionDomain === domain) return state.sessionId;
  const session = await call("POST", "/v1/sessions", domain ? { domain } : {});
  state.sessionId = session.id;
  state.sessionDomain = domain;
  $("session-id").textContent = session.id;
  $("premises").replaceChildren();
  return session.id;
}

async function loadDag(recomputed = []) {
  const graph = await call("GET", `/v1/sessions/${encodeURIComponent(state.sessionId)}/graph?format=json`);
  return drawDag(graph, recomputed);
}

function renderPremises(premises) {
  $("premises").replaceChildren(...premises.map((p) => {
    const li = item(`${p.id}: ${p.text} `, p.status === "retracted" ? "retracted" : "");
    li.dataset.premiseId = p.id;
    if (p.status !== "retracted") li.appendChild(button("Retract", () => retract(p.id)));
    return li;
  }));
}

async function renderTurn(turn) {
  if (turn.response) await renderResult(turn.response);
  else if (turn.answer) $("answer").textContent = turn.answer.text;
  if (turn.message) setStatus(turn.message);
  renderPremises(turn.premises);
  const recomputed = turn.reinference ? turn.reinference.recomputed : [];
  const highlighted = await loadDag(recomputed);
  return highlighted;
}

async function sessionTurn(prompt, domain, maxNewTokens) {
  const id = await ensureSession(domain);
  const turn = await call("POST", `/v1/sessions/${encodeURIComponent(id)}/turns`,
    { prompt, options: { max_new_tokens: maxNewTokens } });
  await renderTurn(turn);
  return turn;
}

async function retract(premiseId) {
  setStatus(`Retracting ${premiseId}; re-running what depended on it…`);
  try {
    const turn = await call("DELETE",
      `/v1/sessions/${encodeURIComponent(state.sessionId)}/premises/${encodeURIComponent(premiseId)}`);
    resetRun();
    const highlighted = await renderTurn(turn);
    const r = turn.reinference;
    setStatus(r
      ? `Retracted ${premiseId}: ${r.recomputed.length} recomputed (${highlighted} highlighted), ` +
        `${r.reused.length} reused, ${r.removed.length} removed, saved ${Math.round(r.saved_ms)} ms`
      : `Retracted ${premiseId}`);
  } catch (error) {
    reportError(error);
  }
}

// --- confirmations -----------------------------------------------------------------------

async function loadConfirmations() {
  const list = $("confirmations");
  let body;
  try {
    body = await call("GET", "/v1/confirmations");
  } catch (error) {
    list.replaceChildren(item(error.status === 404 || error.status === 405
      ? "Confirmations are not available on this server." : error.message, "muted"));
    return;
  }
  if (body.items.length === 0) {
    list.replaceChildren(item("Nothing awaits confirmation.", "muted"));
    return;
  }
  list.replaceChildren(...body.items.map((c) => {
    const li = item(`${c.kind}: ${c.detail} — “${c.prompt}”`);
    li.dataset.confirmationId = c.id;
    const choices = document.createElement("div");
    for (const choice of c.choices) {
      const b = button(`Keep ${choice.id}: ${choice.text}`, () => resolve(c.id, choice.id));
      b.className = "choice";
      choices.appendChild(b);
    }
    li.appendChild(choices);
    return li;
  }));
}

async function resolve(confirmationId, choiceId) {
  setStatus(`Resolving ${confirmationId} with ${choiceId}; the run continues…`);
  try {
    const outcome = await call("POST", `/v1/confirmations/${encodeURIComponent(confirmationId)}`,
      { choose: choiceId });
    resetRun();
    if (outcome.kind && outcome.session_id) await renderTurn(outcome);
    else await renderResult(outcome);
    setStatus(`Resolved ${confirmationId}: ${choiceId} stands`);
  } catch (error) {
    reportError(error);
  }
  await loadConfirmations();
}

// --- forms -------------------------------------------------------------------------------

function showKeyState() {
  $("key-state").textContent = storedKey() ? "key set for this tab" : "no key";
}

$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  storeKey($("api-key").value);
  $("api-key").value = "";
  showKeyState();
  loadConfirmations();
});

$("new-session").addEventListener("click", () => {
  state.sessionId = null;
  $("session-id").textContent = "";
  $("premises").replaceChildren();
});

$("refresh-confirmations").addEventListener("click", loadConfirmations);

$("ask-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!storedKey()) {
    setStatus("Paste an API key first.", true);
    return;
  }
  const prompt = $("prompt").value.trim();
  const domain = $("domain").value.trim() || null;
  const maxNewTokens = Number($("max-new-tokens").value) || 64;
  $("submit").disabled = true;
  resetRun();
  setStatus("Extracting constraints…");
  try {
    await loadConstraintGraph(prompt, domain);
    const result = $("use-session").checked
      ? await sessionTurn(prompt, domain, maxNewTokens)
      : await reasonStreamed(prompt, domain, maxNewTokens);
    const status = result.response ? result.response.status : result.status;
    if (!$("status").classList.contains("error")) {
      setStatus(`Done (${status}); ${state.steps.length} steps, constraint graph ` +
        `${nodeCount("constraint-graph")} nodes.`);
    }
  } catch (error) {
    reportError(error);
  } finally {
    $("submit").disabled = false;
  }
});

// Read-only inspection of the drawn graphs (used by the browser tests).
window.tenetConsole = Object.freeze({ nodesOf, edgesOf });

showKeyState();
if (storedKey()) loadConfirmations();
