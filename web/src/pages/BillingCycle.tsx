import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, dateTime, type Invoice, type List, type Plan, type SubscriptionAnswer, usd } from '../api.ts';
import { ErrorMessage, Field, Section, TableWrap } from '../ui.tsx';

/** Who an invoice names: the seller or the buyer. */
type Party = Invoice['buyer'];

const day = (iso: string | null): string => (iso ? iso.slice(0, 10) : '');

/** The subscription: status, next renewal, cancel/resume, overage so far and its cap, and who pays first. */
export function SubscriptionSection() {
  const client = useQueryClient();
  const sub = useQuery({
    queryKey: ['subscription'],
    queryFn: () => api<SubscriptionAnswer>('/api/billing/subscription'),
  });
  const [cap, setCap] = useState('');
  const refresh = (): void => {
    void client.invalidateQueries({ queryKey: ['subscription'] });
    void client.invalidateQueries({ queryKey: ['account'] });
  };
  const act = useMutation({
    mutationFn: (what: 'cancel' | 'resume') =>
      api<SubscriptionAnswer>(`/api/billing/subscription/${what}`, { method: 'POST' }),
    onSuccess: refresh,
  });
  const setOverageCap = useMutation({
    mutationFn: (capUsd: number | null) =>
      api<SubscriptionAnswer>('/api/billing/overage-cap', { method: 'PUT', body: { cap_usd: capUsd } }),
    onSuccess: refresh,
  });
  const plans = useQuery({ queryKey: ['plans'], queryFn: () => api<List<Plan>>('/plans') });
  const change = useMutation({
    mutationFn: (plan: string) => api('/api/billing/subscription/change', { method: 'POST', body: { plan } }),
    onSuccess: () => {
      refresh();
      void client.invalidateQueries({ queryKey: ['invoices'] });
      void client.invalidateQueries({ queryKey: ['orders'] });
    },
  });
  const s = sub.data?.subscription;
  const currentPrice = plans.data?.data.find((p) => p.id === s?.plan)?.monthly_price_usd ?? 0;
  const others = (plans.data?.data ?? []).filter((p) => p.purchasable && p.id !== s?.plan);
  return (
    <Section title="Subscription">
      <ErrorMessage error={sub.error ?? act.error ?? setOverageCap.error ?? change.error} />
      {sub.data && !s && <p>No subscription yet: buy a plan below and it renews every 30 days.</p>}
      {s && (
        <>
          <dl className="pairs">
            <dt>Plan</dt>
            <dd>{s.plan}</dd>
            <dt>Status</dt>
            <dd data-testid="subscription-status">{s.status.replace('_', ' ')}</dd>
            <dt>Current period</dt>
            <dd>
              {day(s.current_period_start)} to {day(s.current_period_end)}
            </dd>
            {s.next_renewal_at && (
              <>
                <dt>Next renewal</dt>
                <dd data-testid="next-renewal">{dateTime(s.next_renewal_at)}</dd>
              </>
            )}
            {s.cancel_at_period_end && (
              <>
                <dt>Ends</dt>
                <dd data-testid="ends-at">{dateTime(s.current_period_end)} (cancelled, not renewed)</dd>
              </>
            )}
            {s.next_plan && (
              <>
                <dt>From the next period</dt>
                <dd>{s.next_plan}</dd>
              </>
            )}
            {s.grace_until && (
              <>
                <dt>Grace period until</dt>
                <dd>{dateTime(s.grace_until)}</dd>
              </>
            )}
            <dt>Overage this period</dt>
            <dd>
              {usd(s.overage_accrued_usd)} (list price × {s.overage_price_multiplier}, cap{' '}
              {s.overage_cap_usd === null ? 'none' : usd(s.overage_cap_usd)})
            </dd>
          </dl>
          {(s.status === 'active' || s.status === 'past_due') && (
            <p className="actions">
              {s.cancel_at_period_end ? (
                <button type="button" onClick={() => act.mutate('resume')} disabled={act.isPending}>
                  Resume subscription
                </button>
              ) : (
                <button type="button" onClick={() => act.mutate('cancel')} disabled={act.isPending}>
                  Cancel at period end
                </button>
              )}
              {others.map((p) =>
                p.monthly_price_usd > currentPrice ? (
                  <button
                    key={p.id}
                    type="button"
                    onClick={() => change.mutate(p.id)}
                    disabled={change.isPending}
                    title="Starts now; the unused part of this period is credited on the invoice"
                  >
                    Upgrade to {p.name} now
                  </button>
                ) : (
                  <button
                    key={p.id}
                    type="button"
                    onClick={() => change.mutate(p.id)}
                    disabled={change.isPending || s.next_plan === p.id}
                    title="Takes effect at the end of this period"
                  >
                    Downgrade to {p.name} at period end
                  </button>
                ),
              )}
            </p>
          )}
          {(s.status === 'active' || s.status === 'past_due') && others.length > 0 && (
            <p className="hint">
              An upgrade starts a new period now and credits the unused part of this one; a downgrade takes
              effect when this period ends.
            </p>
          )}
          <form
            className="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              setOverageCap.mutate(cap.trim() === '' ? null : Number(cap));
            }}
          >
            <Field
              label="Overage cap (USD; 0 stops at the quota, empty for the plan's default)"
              type="number"
              min={0}
              step="0.01"
              value={cap}
              onChange={setCap}
            />
            <button type="submit" disabled={setOverageCap.isPending}>
              Set cap
            </button>
          </form>
        </>
      )}
      <p className="hint">
        Who pays for a request, in this order: your plan's included quota, then prepaid top-up credit, then
        overage (billed with the next renewal at the plan's rate, up to your cap).
      </p>
    </Section>
  );
}

/** The invoice as a page of its own: what is printed, shown and downloaded. */
export function invoiceHtml(invoice: Invoice): string {
  const esc = (text: string | null): string =>
    (text ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
  const money = (amount: number): string => `${invoice.currency} ${amount.toFixed(2)}`;
  const party = (p: Party): string =>
    [p.name, p.email, p.address, p.tax_id ? `Tax id: ${p.tax_id}` : null]
      .filter(Boolean)
      .map((line) => `<div>${esc(line)}</div>`)
      .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Invoice ${esc(invoice.number)}</title>
<style>body{font:14px system-ui,sans-serif;max-width:720px;margin:2em auto;padding:0 1em}table{width:100%;border-collapse:collapse}
td,th{padding:.4em;border-bottom:1px solid #ccc;text-align:left}td.n,th.n{text-align:right}.parties{display:flex;gap:2em;justify-content:space-between}</style>
</head><body><h1>Invoice ${esc(invoice.number)}</h1><p>Date: ${esc(day(invoice.issued_at))}${invoice.order_id ? ` · Order ${esc(invoice.order_id)}` : ''}</p>
<div class="parties"><div><h2>Seller</h2>${party(invoice.seller)}</div><div><h2>Bill to</h2>${party(invoice.buyer)}</div></div>
<table><thead><tr><th>Description</th><th class="n">Amount</th></tr></thead><tbody>
${invoice.lines.map((line) => `<tr><td>${esc(line.description)}</td><td class="n">${money(line.amount_usd)}</td></tr>`).join('')}
</tbody><tfoot><tr><th>Total</th><th class="n">${money(invoice.total_usd)}</th></tr></tfoot></table>
<p>Paid. Amounts in ${esc(invoice.currency)}; no tax charged.</p></body></html>`;
}

function download(invoice: Invoice): void {
  const url = URL.createObjectURL(new Blob([invoiceHtml(invoice)], { type: 'text/html' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = `invoice-${invoice.number}.html`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}

/** The account's invoices; each opens as a printable page and downloads as an HTML file. */
export function InvoicesSection() {
  const invoices = useQuery({ queryKey: ['invoices'], queryFn: () => api<List<Invoice>>('/api/invoices') });
  const [open, setOpen] = useState<Invoice | undefined>();
  return (
    <Section title="Invoices">
      <ErrorMessage error={invoices.error} />
      <TableWrap label="Invoices">
        <table>
          <thead>
            <tr>
              <th scope="col">Number</th>
              <th scope="col">Date</th>
              <th scope="col">Total</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {invoices.data?.data.map((invoice) => (
              <tr key={invoice.id}>
                <td>{invoice.number}</td>
                <td>{day(invoice.issued_at)}</td>
                <td>{usd(invoice.total_usd)}</td>
                <td>
                  <button type="button" onClick={() => setOpen(invoice)}>
                    Open {invoice.number}
                  </button>{' '}
                  <button type="button" onClick={() => download(invoice)}>
                    Download {invoice.number}
                  </button>
                </td>
              </tr>
            ))}
            {invoices.data?.data.length === 0 && (
              <tr>
                <td colSpan={4}>No invoices yet.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableWrap>
      {open && (
        <article className="invoice" aria-label={`Invoice ${open.number}`}>
          <h3>Invoice {open.number}</h3>
          <p>Date: {day(open.issued_at)}</p>
          <dl className="pairs">
            <dt>Seller</dt>
            <dd>{open.seller.name}</dd>
            <dt>Bill to</dt>
            <dd>
              {[
                open.buyer.name,
                open.buyer.email,
                open.buyer.address,
                open.buyer.tax_id && `Tax id ${open.buyer.tax_id}`,
              ]
                .filter(Boolean)
                .join(', ')}
            </dd>
          </dl>
          <TableWrap label={`Lines of invoice ${open.number}`}>
            <table>
              <tbody>
                {open.lines.map((line, index) => (
                  <tr key={index}>
                    <td>{line.description}</td>
                    <td>{usd(line.amount_usd)}</td>
                  </tr>
                ))}
                <tr>
                  <th scope="row">Total</th>
                  <td>
                    <strong>{usd(open.total_usd)}</strong>
                  </td>
                </tr>
              </tbody>
            </table>
          </TableWrap>
          <p className="actions">
            <button type="button" onClick={() => window.print()}>
              Print
            </button>{' '}
            <button type="button" onClick={() => setOpen(undefined)}>
              Close
            </button>
          </p>
        </article>
      )}
    </Section>
  );
}

/** Who the invoices are made out to: optional name, address and tax id. */
export function BillingDetailsSection() {
  const client = useQueryClient();
  const details = useQuery({
    queryKey: ['billing-details'],
    queryFn: () =>
      api<{ name: string | null; address: string | null; tax_id: string | null }>('/api/billing/details'),
  });
  const [edit, setEdit] = useState<{ name: string; address: string; tax_id: string } | undefined>();
  const shown = edit ?? {
    name: details.data?.name ?? '',
    address: details.data?.address ?? '',
    tax_id: details.data?.tax_id ?? '',
  };
  const save = useMutation({
    mutationFn: () =>
      api('/api/billing/details', {
        method: 'PUT',
        body: {
          name: shown.name.trim() || null,
          address: shown.address.trim() || null,
          tax_id: shown.tax_id.trim() || null,
        },
      }),
    onSuccess: () => {
      setEdit(undefined);
      void client.invalidateQueries({ queryKey: ['billing-details'] });
    },
  });
  const set = (field: 'name' | 'address' | 'tax_id') => (value: string) =>
    setEdit({ ...shown, [field]: value });
  return (
    <Section title="Billing details">
      <ErrorMessage error={details.error ?? save.error} />
      <form
        className="stacked-form"
        data-testid="billing-details"
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Field
          label="Name or company"
          value={shown.name}
          onChange={set('name')}
          autoComplete="organization"
        />
        <Field
          label="Address"
          value={shown.address}
          onChange={set('address')}
          autoComplete="street-address"
        />
        <Field label="Tax id" value={shown.tax_id} onChange={set('tax_id')} />
        <p className="actions">
          <button type="submit" disabled={save.isPending || edit === undefined}>
            Save details
          </button>
          {save.isSuccess && edit === undefined && <span role="status">Saved; new invoices carry them.</span>}
        </p>
      </form>
    </Section>
  );
}

/** The alert types an endpoint may receive beside the payment events. */
const ALERT_TYPES = [
  { id: 'balance.low', label: 'Balance below the threshold' },
  { id: 'key.limit_reached', label: 'A key reaches 80% or 100% of its spending limit' },
  { id: 'trial.expiring', label: 'Trial credit expires in 3 days' },
  { id: 'subscription.renewing', label: 'Subscription renews in 3 days' },
  { id: 'subscription.payment_failed', label: 'A renewal payment failed' },
] as const;

/** Alerts: the low-balance threshold (e-mail) and which alert types the webhook endpoint receives. */
export function AlertSettingsSection() {
  const client = useQueryClient();
  const settings = useQuery({
    queryKey: ['alert-settings'],
    queryFn: () => api<{ low_balance_usd: number | null; webhook_events: string[] }>('/api/billing/alerts'),
  });
  const [edit, setEdit] = useState<{ low: string; events: string[] } | undefined>();
  const shown = edit ?? {
    low:
      settings.data?.low_balance_usd === null || !settings.data ? '' : String(settings.data.low_balance_usd),
    events: settings.data?.webhook_events ?? [],
  };
  const save = useMutation({
    mutationFn: () =>
      api('/api/billing/alerts', {
        method: 'PUT',
        body: {
          low_balance_usd: shown.low.trim() === '' ? null : Number(shown.low),
          webhook_events: shown.events,
        },
      }),
    onSuccess: () => {
      setEdit(undefined);
      void client.invalidateQueries({ queryKey: ['alert-settings'] });
    },
  });
  return (
    <Section title="Alerts">
      <ErrorMessage error={settings.error ?? save.error} />
      <form
        className="stacked-form"
        data-testid="alert-settings"
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Field
          label="E-mail me when my balance falls below (USD; empty for never)"
          type="number"
          min={0}
          step="0.01"
          value={shown.low}
          onChange={(low) => setEdit({ ...shown, low })}
        />
        <fieldset className="checks">
          <legend>Also send these to my webhook endpoint (payment events are always sent)</legend>
          {ALERT_TYPES.map((type) => (
            <label key={type.id}>
              <input
                type="checkbox"
                checked={shown.events.includes(type.id)}
                onChange={(event) =>
                  setEdit({
                    ...shown,
                    events: event.target.checked
                      ? [...shown.events, type.id]
                      : shown.events.filter((e) => e !== type.id),
                  })
                }
              />{' '}
              {type.label} <code>{type.id}</code>
            </label>
          ))}
        </fieldset>
        <p className="actions">
          <button type="submit" disabled={save.isPending || edit === undefined}>
            Save alerts
          </button>
          {save.isSuccess && edit === undefined && <span role="status">Saved.</span>}
        </p>
      </form>
    </Section>
  );
}
