// Small DOM helpers shared by the pages. Text from the server (file names, labels, messages)
// only ever becomes text nodes and attribute values: never markup.

// el('td', {class: 'n'}, 'text', child, ...): an element; strings become text nodes.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') e.className = value;
    else e.setAttribute(key, value === true ? '' : String(value));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

// A server started with --token needs "Authorization: Bearer TOKEN" on every data request;
// the page asks for it once and keeps it for this tab only.
const kTokenKey = 'epochcast-token';

export async function api(path, options = {}) {
  const headers = new Headers(options.headers || {});
  const token = sessionStorage.getItem(kTokenKey);
  if (token) headers.set('Authorization', `Bearer ${token}`);
  const res = await fetch(path, {...options, headers});
  if (res.status === 401) {
    const given = window.prompt('This server needs its access token (serve --token):');
    if (given) {
      sessionStorage.setItem(kTokenKey, given);
      return api(path, options);
    }
  }
  return res;
}

// The message of an error answer ({"error": {"code", "message"}}), or the status line.
export async function error_text(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    if (j && j.error && j.error.message) return `${j.error.message} (HTTP ${res.status})`;
  } catch (_) { /* not JSON: say what came */ }
  return `HTTP ${res.status} ${res.statusText}${text ? ': ' + text.slice(0, 300) : ''}`;
}

// "4.23 s", "12 min 03 s", "2 h 05 min": as the report writes durations.
export function duration(s) {
  if (typeof s !== 'number' || !isFinite(s)) return '-';
  if (s < 0.1) return `${(s * 1000).toFixed(1)} ms`;
  if (s < 10) return `${s.toFixed(2)} s`;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) {
    const t = Math.round(s);
    return `${Math.floor(t / 60)} min ${String(t % 60).padStart(2, '0')} s`;
  }
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

export function usd(x) {
  if (typeof x !== 'number' || !isFinite(x)) return '-';
  if (x < 0.01) return `$${x.toFixed(5)}`;
  if (x < 1) return `$${x.toFixed(4)}`;
  if (x < 1000) return `$${x.toFixed(2)}`;
  return `$${x.toFixed(0)}`;
}
