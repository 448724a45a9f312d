// Drawing: the three graphs (Cytoscape, vendored) and the confidence chart (inline SVG).
// Every label is set as data and drawn by Cytoscape or as SVG text nodes: no HTML is built
// from API values, so a prompt cannot inject markup.

const cytoscape = window.cytoscape;
const SVG = "http://www.w3.org/2000/svg";
const VERDICT_COLOURS = { satisfied: "#1a7f37", violated: "#cf222e", unknown: "#8c959f" };
const VIEW_PALETTE = ["#0969da", "#8250df", "#bf8700", "#1a7f37", "#cf222e", "#0a7b83", "#953800"];
const DAG_SHAPES = {
  premise: "round-rectangle", constraint: "diamond", evidence: "hexagon",
  branch: "tag", step: "ellipse", answer: "star", conclusion: "pentagon",
};
const DAG_COLOURS = {
  premise: "#bf8700", constraint: "#8250df", evidence: "#0969da",
  branch: "#57606a", step: "#1a7f37", answer: "#cf222e", conclusion: "#e36209",
};

/** A stable colour per kind name, so kinds never seen before still get distinct colours. */
export function kindColour(kind) {
  let hash = 0;
  for (const ch of String(kind)) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return `hsl(${hash % 360}, 55%, 62%)`;
}

function shortLabel(text, max = 28) {
  const s = String(text ?? "");
  const tail = s.includes("#") || s.includes("/") ? s.split(/[#/]/).filter(Boolean).pop() : s;
  return tail.length > max ? `${tail.slice(0, max - 1)}…` : tail;
}

const views = new Map();

function view(containerId, style) {
  let cy = views.get(containerId);
  if (!cy) {
    cy = cytoscape({
      container: document.getElementById(containerId),
      style,
      wheelSensitivity: 0.3,
      minZoom: 0.2,
      maxZoom: 1.4,
    });
    views.set(containerId, cy);
  }
  return cy;
}

function redraw(cy, elements, layout) {
  cy.elements().remove();
  cy.add(elements);
  cy.layout({ animate: false, fit: true, padding: 20, ...layout }).run();
}

/** Node count of a drawn graph (tests and the status line read it). */
export function nodeCount(containerId) {
  const cy = views.get(containerId);
  return cy ? cy.nodes().length : 0;
}

const BASE_STYLE = [
  { selector: "node", style: {
    label: "data(label)", "font-size": 9, "text-wrap": "wrap", "text-max-width": 110,
    "text-valign": "bottom", "text-margin-y": 3, width: 26, height: 26,
  } },
  { selector: "edge", style: {
    width: 1.5, "curve-style": "bezier", "target-arrow-shape": "triangle",
    "line-color": "#8c959f", "target-arrow-color": "#8c959f", "font-size": 8,
    label: "data(label)", "text-rotation": "autorotate",
  } },
];

/**
 * The constraint graph of `POST /v1/constraints` (node-link JSON). Fill is the constraint
 * kind; the border is the verdict from `verdicts` (constraint id -> {satisfied}), grey
 * when no verdict is known. Premises are drawn as grey rectangles.
 */
export function drawConstraintGraph(graph, verdicts) {
  const cy = view("constraint-graph", [
    ...BASE_STYLE,
    { selector: "node", style: { "background-color": "data(fill)", "border-width": 4,
      "border-color": "data(border)" } },
    { selector: "node.premise", style: { shape: "round-rectangle", "background-color": "#d0d7de",
      "border-width": 1 } },
    { selector: "node.inactive", style: { opacity: 0.45 } },
    { selector: "edge.entails", style: { "line-color": "#57606a", "target-arrow-color": "#57606a" } },
    { selector: "edge.excludes", style: { "line-style": "dashed", "line-color": "#cf222e",
      "target-arrow-shape": "tee", "target-arrow-color": "#cf222e" } },
    { selector: "edge.overrides", style: { "line-style": "dotted", width: 2.5,
      "line-color": "#8250df", "target-arrow-shape": "vee", "target-arrow-color": "#8250df" } },
  ]);
  const elements = [];
  for (const node of graph.nodes || []) {
    if (node.type === "premise") {
      elements.push({ data: { id: node.id, label: shortLabel(node.text, 40) }, classes: "premise" });
      continue;
    }
    const verdict = verdicts.get(node.id);
    const state = verdict == null ? "unknown" : verdict.satisfied ? "satisfied" : "violated";
    elements.push({
      data: { id: node.id, kind: node.kind, label: `${node.id} ${node.kind}`, fill: kindColour(node.kind),
        border: VERDICT_COLOURS[state], verdict: state },
      classes: `${state}${node.active === false ? " inactive" : ""}`,
    });
  }
  for (const [i, edge] of (graph.edges || []).entries()) {
    elements.push({
      data: { id: `e${i}`, source: edge.source, target: edge.target, label: edge.relation },
      classes: edge.relation,
    });
  }
  redraw(cy, elements, { name: "cose", randomize: false, nodeRepulsion: 9000 });
}

const DECISION_COLOUR = "#e36209";

/** A conclusion's statement without its trailing rule citation: what the rule concludes. */
function conclusionLabel(statement) {
  return String(statement ?? "").replace(/\s*[(（][^()（）]*[)）]\s*[.。]?\s*$/u, "");
}

/**
 * The evidence subgraphs of a run: each fact is an edge subject -> object labelled with its
 * predicate, one colour per view. With a `decision` (the run's `decision` field), each
 * conclusion is drawn as a path through the same graph: the request's words that fired
 * the rule -> the rule (the subject of its evidence facts, so the path joins the drawn
 * evidence) -> the action it concludes; the path's nodes and edges, and the rule's own
 * evidence edges, carry the class `decision` (drawn thick, in the accent colour). Returns
 * the legend entries: the views with their colours, then the decision path.
 */
export function drawEvidence(subgraphs, decision = null) {
  const cy = view("evidence-graph", [
    ...BASE_STYLE,
    { selector: "node", style: { "background-color": "data(colour)" } },
    { selector: "edge", style: { "line-color": "data(colour)", "target-arrow-color": "data(colour)" } },
    { selector: "node.decision", style: { "border-width": 3, "border-color": DECISION_COLOUR,
      "font-weight": "bold" } },
    { selector: "node.case", style: { shape: "round-rectangle", "background-color": "#fff8f0",
      width: 34, height: 20 } },
    { selector: "node.rule", style: { shape: "diamond", width: 32, height: 32 } },
    { selector: "node.action", style: { shape: "star", "background-color": DECISION_COLOUR,
      width: 34, height: 34 } },
    { selector: "edge.decision", style: { width: 3.5, "line-color": DECISION_COLOUR,
      "target-arrow-color": DECISION_COLOUR, "font-size": 10, "z-index": 10 } },
    { selector: "node.decision", style: { "font-size": 11, "z-index": 10 } },
    { selector: ".faded", style: { opacity: 0.3 } },
    { selector: "edge.faded", style: { label: "" } },
  ]);
  const nodes = new Map();
  const edges = [];
  const legend = [];
  const node = (id, label, colour, classes = []) => {
    const known = nodes.get(id);
    if (known) {
      known.classes = [...new Set([...(known.classes || "").split(" ").filter(Boolean), ...classes])].join(" ");
      return;
    }
    nodes.set(id, { data: { id, label, colour }, classes: classes.join(" ") });
  };
  const facts = new Map();
  subgraphs.forEach((subgraph, index) => {
    const colour = VIEW_PALETTE[index % VIEW_PALETTE.length];
    legend.push({ text: `${subgraph.view} (${subgraph.facts.length} facts)`, colour });
    for (const fact of subgraph.facts) {
      for (const term of [fact.subject, fact.object]) node(term, shortLabel(term), colour);
      const id = `${subgraph.view}:${fact.id}`;
      if (!facts.has(fact.id)) facts.set(fact.id, []);
      facts.get(fact.id).push({ id, subject: fact.subject });
      edges.push({ data: { id, source: fact.subject, target: fact.object,
        label: shortLabel(fact.predicate, 20), colour }, classes: "" });
    }
  });
  const conclusions = decision ? decision.conclusions : [];
  const onPath = new Set();
  conclusions.forEach((c, k) => {
    const shown = c.evidence_ids.flatMap((id) => facts.get(id) || []);
    const rule = shown.length ? shown[0].subject : `rule:${c.rule_id}`;
    shown.forEach((edge) => onPath.add(edge.id));
    node(rule, c.rule_id, DECISION_COLOUR, ["decision", "rule"]);
    nodes.get(rule).data.label = c.rule_id;
    node(c.action, shortLabel(conclusionLabel(c.statement), 48), DECISION_COLOUR, ["decision", "action"]);
    edges.push({ data: { id: `decision:${k}:concludes`, source: rule, target: c.action,
      label: "concludes", colour: DECISION_COLOUR }, classes: "decision" });
    const words = [...new Set(c.case_facts.filter((f) => f.span).map((f) => f.span.text))];
    words.forEach((text, w) => {
      const id = `case:${text}`;
      node(id, `«${shortLabel(text, 32)}»`, "#fff8f0", ["decision", "case"]);
      edges.push({ data: { id: `decision:${k}:fires:${w}`, source: id, target: rule, label: "fires",
        colour: DECISION_COLOUR }, classes: "decision" });
    });
  });
  for (const edge of edges) if (onPath.has(edge.data.id)) edge.classes = "decision";
  if (conclusions.length) {
    // The path stands out: the rest of the evidence stays drawn, faded.
    const ends = new Set(edges.filter((e) => e.classes === "decision").flatMap((e) => [e.data.source, e.data.target]));
    for (const [id, n] of nodes) if (!n.classes.includes("decision") && !ends.has(id)) n.classes += " faded";
    for (const edge of edges) if (edge.classes !== "decision") edge.classes = "faded";
  }
  if (conclusions.length) {
    legend.push({ text: `decision path (${conclusions.length} conclusions): words → rule → action`,
      colour: DECISION_COLOUR });
  }
  redraw(cy, [...nodes.values(), ...edges], { name: "cose", randomize: false });
  return legend;
}

/**
 * The session's reasoning DAG (`GET /v1/sessions/{id}/graph`, node-link JSON). Shape and
 * colour follow the node kind; steps and answers are more opaque the higher their
 * confidence; ids in `recomputed` get the `recomputed` class (thick orange border).
 */
export function drawDag(graph, recomputed) {
  const cy = view("dag-graph", [
    ...BASE_STYLE,
    { selector: "node", style: { shape: "data(shape)", "background-color": "data(colour)",
      "background-opacity": "data(opacity)", "border-width": 1, "border-color": "#57606a" } },
    { selector: "node.retracted", style: { "border-style": "dashed", opacity: 0.5 } },
    { selector: "node.recomputed", style: { "border-width": 5, "border-color": "#e36209" } },
    { selector: "edge", style: { label: "", width: 1 } },
  ]);
  const marked = new Set(recomputed);
  const elements = [];
  for (const node of graph.nodes || []) {
    const attrs = node.attrs || {};
    const confidence = typeof attrs.confidence === "number" ? attrs.confidence : null;
    const classes = [node.kind];
    if (marked.has(node.id)) classes.push("recomputed");
    if (attrs.status === "retracted") classes.push("retracted");
    elements.push({
      data: {
        id: node.id, kind: node.kind, shape: DAG_SHAPES[node.kind] || "ellipse",
        colour: DAG_COLOURS[node.kind] || kindColour(node.kind),
        opacity: confidence == null ? 0.85 : 0.25 + 0.75 * Math.max(0, Math.min(1, confidence)),
        label: confidence == null ? shortLabel(node.label || node.id)
          : `${shortLabel(node.label || node.id)} (${confidence.toFixed(2)})`,
      },
      classes: classes.join(" "),
    });
  }
  for (const [i, edge] of (graph.edges || []).entries()) {
    elements.push({ data: { id: `d${i}`, source: edge.source, target: edge.target } });
  }
  redraw(cy, elements, { name: "breadthfirst", directed: true, spacingFactor: 0.9 });
  return cy.nodes(".recomputed").length;
}

/**
 * The data and classes of the nodes drawn in a graph panel matching a Cytoscape selector:
 * what the page shows, for scripts and browser tests that inspect it.
 */
export function nodesOf(containerId, selector = "node") {
  const cy = views.get(containerId);
  return cy ? cy.nodes(selector).map((n) => ({ ...n.data(), classes: n.classes() })) : [];
}

/** The data and classes of the edges drawn in a graph panel matching a Cytoscape selector. */
export function edgesOf(containerId, selector = "edge") {
  const cy = views.get(containerId);
  return cy ? cy.edges(selector).map((e) => ({ ...e.data(), classes: e.classes() })) : [];
}

/** A horizontal bar per step: width is the confidence in [0, 1], colour from red to green. */
export function drawConfidenceChart(container, steps) {
  const rowHeight = 18;
  const labelWidth = 140;
  const width = 360;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", String(width + labelWidth + 40));
  svg.setAttribute("height", String(Math.max(1, steps.length) * rowHeight + 4));
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "confidence by step");
  steps.forEach((step, i) => {
    const y = i * rowHeight + 2;
    const value = Math.max(0, Math.min(1, Number(step.confidence) || 0));
    const label = document.createElementNS(SVG, "text");
    label.setAttribute("x", "0");
    label.setAttribute("y", String(y + 12));
    label.textContent = shortLabel(step.id, 24);
    const bar = document.createElementNS(SVG, "rect");
    bar.setAttribute("class", "bar");
    bar.setAttribute("x", String(labelWidth));
    bar.setAttribute("y", String(y));
    bar.setAttribute("height", String(rowHeight - 4));
    bar.setAttribute("width", String(Math.max(1, value * width)));
    bar.setAttribute("fill", `hsl(${Math.round(value * 120)}, 60%, 45%)`);
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${step.id}: ${value.toFixed(3)}${step.calibration_hint ? ` (${step.calibration_hint})` : ""}`;
    bar.appendChild(title);
    const figure = document.createElementNS(SVG, "text");
    figure.setAttribute("x", String(labelWidth + value * width + 4));
    figure.setAttribute("y", String(y + 12));
    figure.textContent = value.toFixed(2);
    svg.append(label, bar, figure);
  });
  container.replaceChildren(svg);
}
