// The upload page: the form's trace (and host log) go to POST /v1/report; the report comes back
// as one HTML document and is shown in a frame (no scripts run in it).
import {api, el, error_text} from './dom.js';

const form = document.getElementById('upload');
const status = document.getElementById('status');
const errorBox = document.getElementById('error');
const result = document.getElementById('result');
const frame = document.getElementById('report');
const save = document.getElementById('save');
const button = document.getElementById('submit');

// The catalog's GPUs for "Recorded on"; the page works without them (the log names its GPU).
api('/v1/gpus').then(r => (r.ok ? r.json() : null)).then(j => {
  const select = document.getElementById('source-gpu');
  for (const id of (j && j.gpus) || []) select.append(el('option', {value: id}, id));
}).catch(() => {});

function query() {
  const q = new URLSearchParams();
  const source = document.getElementById('source-gpu').value;
  if (source) q.set('source_gpu', source);
  const precision = document.getElementById('precision').value;
  if (precision !== 'auto') q.set('precision', precision);
  const epochs = document.getElementById('epochs').value.trim();
  if (epochs && epochs !== '10') q.set('epochs', epochs);
  const epoch_s = document.getElementById('epoch-s').value.trim();
  if (epoch_s) q.set('epoch_s', epoch_s);
  const s = q.toString();
  return s ? `?${s}` : '';
}

function show_error(message) {
  errorBox.textContent = message;
  errorBox.hidden = false;
}

// The frame as tall as the report, so the page scrolls as one.
frame.addEventListener('load', () => {
  const doc = frame.contentDocument;
  if (doc && doc.documentElement) frame.style.height = `${doc.documentElement.scrollHeight + 20}px`;
});

form.addEventListener('submit', async event => {
  event.preventDefault();
  errorBox.hidden = true;
  // The form as the browser sends it: an unfilled host field is an empty part (meaning none).
  const body = new FormData(form);
  button.disabled = true;
  const started = performance.now();
  const tick = () => { status.textContent = `Reading and predicting… ${((performance.now() - started) / 1000).toFixed(0)} s`; };
  tick();
  const timer = setInterval(tick, 1000);
  try {
    const res = await api(`/v1/report${query()}`, {method: 'POST', body});
    if (!res.ok) {
      show_error(await error_text(res));
      status.textContent = '';
      return;
    }
    const html = await res.text();
    frame.srcdoc = html;
    if (save.href.startsWith('blob:')) URL.revokeObjectURL(save.href);
    save.href = URL.createObjectURL(new Blob([html], {type: 'text/html'}));
    const file = document.getElementById('trace').files[0];
    save.download = `${(file ? file.name : 'trace').replace(/[^A-Za-z0-9._-]+/g, '_')}.html`;
    result.hidden = false;
    status.textContent = `Done in ${((performance.now() - started) / 1000).toFixed(1)} s`;
  } catch (e) {
    show_error(`The request failed: ${e.message}`);
    status.textContent = '';
  } finally {
    clearInterval(timer);
    button.disabled = false;
  }
});
