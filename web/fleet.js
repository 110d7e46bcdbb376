// The fleet page: GET /v1/fleet (what `epochcast watch` sees through Prometheus: every GPU,
// its jobs, each job's detected epoch and its predictions) as one table, refreshed every pass.
import {api, clear, duration, el, error_text, usd} from './dom.js';

const statusLine = document.getElementById('fleet-status');
const root = document.getElementById('fleet');
// Never refresh faster than this, whatever the watcher's pass interval: the page reads, it
// does not poll Prometheus.
const kMinRefreshS = 5;
const kColumns = ['GPU', 'model', 'state', 'job', 'seen (UTC)', 'samples', 'epoch (confidence)', 'fastest',
  'cheapest per epoch', 'predictions'];
const kGpuColumns = 3;  // GPU, model, state: written on a GPU's first job row only

function job_name(job) {
  const l = job.labels || {};
  const parts = [l.namespace, l.pod, l.container].filter(x => x);
  return parts.length ? parts.join(' / ') : job.id || '(no job labels)';
}

// "12-01 22:00" (UTC, as the column head says): minutes are enough to tell jobs apart.
function when(iso) {
  if (!iso) return 'now';
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toISOString().slice(5, 16).replace('T', ' ');
}

function cheapest(predictions) {
  let best = null;
  for (const p of predictions || [])
    for (const c of p.usd_per_epoch || [])
      if (typeof c.usd === 'number' && (!best || c.usd < best.c.usd)) best = {p, c};
  return best;
}

function fastest(predictions) {
  let best = null;
  for (const p of predictions || [])
    if (typeof p.epoch_s === 'number' && (!best || p.epoch_s < best.epoch_s)) best = p;
  return best;
}

// One job's predictions, fastest first: a row under the job's, shown by its button.
function predictions_row(job) {
  const rows = [...(job.predictions || [])].sort((a, b) => a.epoch_s - b.epoch_s);
  const table = el('table', {class: 'predictions'},
    el('thead', {}, el('tr', {}, el('th', {}, 'target GPU'), el('th', {class: 'n'}, 'epoch'),
      el('th', {class: 'n'}, '90 % interval'), el('th', {}, 'cheapest instance'), el('th', {class: 'n'}, '$/epoch'))),
    el('tbody', {}, rows.map(p => {
      const c = cheapest([p]);
      return el('tr', {'data-target-gpu': p.target_gpu}, el('td', {}, p.target_gpu), el('td', {class: 'n'}, duration(p.epoch_s)),
        el('td', {class: 'n'}, `${duration(p.lo_s)} - ${duration(p.hi_s)}`),
        el('td', {}, c ? `${c.c.provider} ${c.c.instance}` : '(no price)'), el('td', {class: 'n'}, c ? usd(c.c.usd) : '-'));
    })));
  const caveat = job.why ? el('p', {class: 'muted'}, `Caveat: ${job.why}`) : null;
  return el('tr', {class: 'predictions-row', 'data-predictions-of': job.id, hidden: true}, el('td', {colspan: kColumns.length}, table, caveat));
}

function toggle_button(job, row) {
  const button = el('button', {type: 'button', class: 'toggle', 'aria-expanded': 'false'},
    `${(job.predictions || []).length} GPU types`);
  button.addEventListener('click', () => {
    row.hidden = !row.hidden;
    button.setAttribute('aria-expanded', String(!row.hidden));
  });
  return button;
}

function job_cells(job, details) {
  const span = `${when(job.start)} – ${job.end ? when(job.end) : 'now'}`;
  if (!job.found) {
    return [el('td', {}, job_name(job)), el('td', {}, span), el('td', {class: 'n'}, job.samples ?? '-'),
      el('td', {class: 'why bad', colspan: 4}, `no prediction: ${job.why || 'no epoch period found'}`)];
  }
  const f = fastest(job.predictions), c = cheapest(job.predictions);
  return [el('td', {}, job_name(job)), el('td', {}, span), el('td', {class: 'n'}, job.samples ?? '-'),
    el('td', {class: 'n'}, `${duration(job.epoch_s)} (${typeof job.confidence === 'number' ? job.confidence.toFixed(2) : '-'})`),
    el('td', {}, f ? `${f.target_gpu} ${duration(f.epoch_s)}` : '-'),
    el('td', {}, c ? `${c.p.target_gpu} on ${c.c.provider} ${c.c.instance} ${usd(c.c.usd)}` : '-'),
    el('td', {}, details ? toggle_button(job, details) : (job.why || 'no predictions'))];
}

function render(fleet) {
  clear(root);
  const pass = fleet.last_pass;
  const passText = pass ? `last pass ${when(pass.started)} UTC, ${Number(pass.seconds).toFixed(1)} s, ${pass.queries} queries${pass.ok ? '' : ' (failed)'}`
                        : 'no pass finished yet';
  statusLine.textContent = `Watching ${fleet.source || '(unknown source)'} (shard ${fleet.shard || '1/1'}, every ${fleet.every_s ?? '?'} s): ` +
    `${passText}; ${fleet.errors_total ?? 0} errors so far.`;
  statusLine.className = pass && !pass.ok ? 'bad' : '';
  const gpus = fleet.gpus || [];
  if (!gpus.length) {
    root.append(el('p', {id: 'no-gpus', class: 'notice'},
      pass ? 'The watcher found no GPUs in its source: no dcgm-exporter series match its selector.'
           : 'The watcher has not finished its first pass yet; this page refreshes by itself.'));
    return;
  }
  const jobs = gpus.reduce((n, g) => n + (g.jobs || []).length, 0);
  root.append(el('p', {id: 'fleet-summary'}, `${gpus.length} GPUs, ${jobs} jobs; ` +
    `${gpus.filter(g => g.state === 'busy').length} busy.`));
  const body = el('tbody');
  for (const g of gpus) {
    const head = [el('td', {}, `${g.hostname || '-'} gpu ${g.gpu ?? '-'}`),
      el('td', {title: g.uuid || ''}, g.model_name || '-', g.catalog_id ? '' : el('span', {class: 'muted'}, ' (not in the catalog)')),
      el('td', {class: g.state === 'busy' ? 'good' : 'muted'}, g.state || '-')];
    const list = g.jobs || [];
    if (!list.length) {
      body.append(el('tr', {class: 'gpu-first', 'data-uuid': g.uuid}, head, el('td', {class: 'muted', colspan: kColumns.length - kGpuColumns}, 'no job seen')));
      continue;
    }
    list.forEach((job, i) => {
      const lead = i === 0 ? head : [el('td', {colspan: kGpuColumns})];
      const details = job.found && (job.predictions || []).length ? predictions_row(job) : null;
      body.append(el('tr', {class: i === 0 ? 'gpu-first job' : 'job', 'data-uuid': g.uuid, 'data-job': job.id}, lead,
        job_cells(job, details)));
      if (details) body.append(details);
    });
  }
  root.append(el('div', {class: 'scroll'}, el('table', {id: 'fleet-table'},
    el('thead', {}, el('tr', {}, kColumns.map(h => el('th', {}, h)))), body)));
}

async function refresh() {
  let next = 60;
  try {
    const res = await api('/v1/fleet');
    if (res.status === 404) {
      statusLine.textContent = '';
      clear(root).append(el('p', {id: 'no-fleet', class: 'notice'},
        'No fleet watched: this server runs no fleet watcher. Start one with ',
        el('code', {}, 'epochcast watch --prometheus URL --listen ADDR'),
        ' and open its page, or upload a trace on the ', el('a', {href: '/'}, 'first page'), '.'));
      return;  // nothing will appear here by waiting
    }
    if (!res.ok) throw new Error(await error_text(res));
    const fleet = await res.json();
    render(fleet);
    next = Math.max(kMinRefreshS, Number(fleet.every_s) || 60);
  } catch (e) {
    statusLine.textContent = `Cannot read the fleet: ${e.message}`;
    statusLine.className = 'bad';
  }
  setTimeout(refresh, next * 1000);
}

refresh();
