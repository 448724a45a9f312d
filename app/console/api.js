// The Tenet API as the console calls it: the same endpoints and key as any client.
// The key lives in sessionStorage only (gone when the tab closes); nothing is cached.

const KEY_ITEM = "tenet.apiKey";

export class ApiError extends Error {
  /** A non-2xx answer; `detail` is the RFC 9457 problem detail when the server sent one. */
  constructor(status, title, detail) {
    super(`${status} ${title}${detail ? `: ${detail}` : ""}`);
    this.status = status;
    this.detail = detail;
  }
}

export function storedKey() {
  return sessionStorage.getItem(KEY_ITEM) || "";
}

export function storeKey(key) {
  sessionStorage.setItem(KEY_ITEM, key.trim());
}

function headers(json) {
  const h = { Authorization: `Bearer ${storedKey()}` };
  if (json) h["Content-Type"] = "application/json";
  return h;
}

async function failure(response) {
  let title = response.statusText;
  let detail = "";
  try {
    const body = await response.json();
    title = body.title || title;
    detail = body.detail || "";
  } catch {
    // not a problem+json body: keep the status line
  }
  return new ApiError(response.status, title, detail);
}

/** `method path` with an optional JSON body; resolves to parsed JSON or text. */
export async function call(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

/**
 * POST `path` and read its text/event-stream answer, calling `onEvent(name, data)` per event
 * as it arrives. EventSource cannot POST, so the stream is read from fetch's ReadableStream
 * and split on blank lines as the SSE format defines (multi-line `data:` fields joined by \n).
 */
export async function postStream(path, body, onEvent) {
  const response = await fetch(path, {
    method: "POST",
    headers: { ...headers(true), Accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += value.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      dispatch(buffer.slice(0, cut), onEvent);
      buffer = buffer.slice(cut + 2);
    }
    if (done) break;
  }
  if (buffer.trim()) dispatch(buffer, onEvent);
}

function dispatch(block, onEvent) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (data.length) onEvent(name, JSON.parse(data.join("\n")));
}
