import { createHash } from 'node:crypto';
import type { StatusDocument } from '../operators/status-snapshot.ts';
import type { Announcement } from '../store/announcements-repo.ts';
import { utcDay } from '../core/time.ts';

// The dashboard's palette (web/src/styles.css); no script, and the one style block is allowed by its hash.
const STYLE = `:root{--ink:#1b1f24;--muted:#4b5563;--line:#d5d9e0;--bg:#f5f6f8;--card:#fff;--accent:#1d4ed8;--danger:#b42318;--ok:#05603a;--warn:#b54708;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--ink);background:var(--bg);line-height:1.45}
*{box-sizing:border-box}body{margin:0}main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.6rem;margin:.5rem 0 1rem}h2{font-size:1.15rem;margin:0 0 .75rem}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem;margin-bottom:1rem}
.muted{color:var(--muted)}.model{display:flex;justify-content:space-between;align-items:baseline;margin-top:.75rem}
.state{font-weight:600}.operational{color:var(--ok)}.degraded{color:var(--warn)}.down{color:var(--danger)}
.bar{display:flex;gap:1px;height:1.5rem;margin:.25rem 0}.bar span{flex:1;border-radius:2px;background:var(--line)}
.bar .up{background:var(--ok)}.bar .partial{background:var(--warn)}.bar .out{background:var(--danger)}
.notice{border-left:4px solid var(--accent);padding:.25rem .75rem;margin:.75rem 0}
.notice.major,.notice.critical{border-color:var(--danger)}.notice.minor{border-color:var(--warn)}
.notice p{margin:.25rem 0;white-space:pre-wrap}a{color:var(--accent)}`;

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/** Headers of the status page: a strict policy (no script at all, only this page's own style block). */
export const STATUS_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'public, max-age=5',
};

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STATE_LABEL = { operational: 'Operational', degraded: 'Degraded', down: 'Down' } as const;

function barClass(availability: number | null): string {
  if (availability === null) return '';
  if (availability >= 0.999) return 'up';
  return availability >= 0.9 ? 'partial' : 'out';
}

function notice(a: Announcement): string {
  const when = a.breaking
    ? `Takes effect ${a.effectiveAt === null ? '' : utcDay(a.effectiveAt)}`
    : `Since ${new Date(a.startsAt).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const models = a.models.length > 0 ? ` · ${escapeHtml(a.models.join(', '))}` : '';
  return `<div class="notice ${a.severity}" id="${escapeHtml(a.id)}"><strong>${escapeHtml(a.title)}</strong>
<div class="muted">${when}${models} · ${a.severity}</div><p>${escapeHtml(a.body)}</p></div>`;
}

function notices(title: string, list: readonly Announcement[], empty: string): string {
  return `<section><h2>${title}</h2>${list.length === 0 ? `<p class="muted">${empty}</p>` : list.map(notice).join('\n')}</section>`;
}

/** The public status page: each model's state and 90-day bar, incidents, notices and breaking changes. */
export function renderStatusPage(status: StatusDocument): string {
  const worst = status.models.some((m) => m.state === 'down')
    ? 'down'
    : status.models.some((m) => m.state === 'degraded')
      ? 'degraded'
      : 'operational';
  const headline = {
    operational: 'All models operational',
    degraded: 'Some models degraded',
    down: 'Some models down',
  }[worst];
  const models = status.models
    .map((model) => {
      const bar = model.availability
        .map(
          (day) =>
            `<span class="${barClass(day.availability)}" title="${day.day}: ${day.availability === null ? 'no data' : `${(day.availability * 100).toFixed(2)} %`}"></span>`,
        )
        .join('');
      const uptime =
        model.uptime === null ? 'no data yet' : `${(model.uptime * 100).toFixed(2)} % over 90 days`;
      return `<div class="model"><strong>${escapeHtml(model.id)}</strong><span class="state ${model.state}">${STATE_LABEL[model.state]}</span></div>
<div class="bar" aria-label="${escapeHtml(model.id)} availability, 90 days">${bar}</div><div class="muted">${uptime}</div>`;
    })
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tollgate status</title><link rel="alternate" type="application/atom+xml" title="Tollgate announcements" href="/status/feed.atom">
<style>${STYLE}</style></head><body><main>
<h1>Tollgate status</h1><section><h2 class="state ${worst}">${headline}</h2>
<p class="muted">Updated ${new Date(status.updatedAt).toISOString().slice(0, 19).replace('T', ' ')} UTC · <a href="/status.json">JSON</a> · <a href="/status/feed.atom">Atom feed</a></p>
${models}</section>
${notices('Current incidents', status.incidents, 'No incidents.')}
${notices('Upcoming breaking changes', status.breakingChanges, 'None announced.')}
${notices('Announcements', status.announcements, 'No announcements.')}
</main></body></html>`;
}
