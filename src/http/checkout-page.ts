import type { OrderRecord } from '../core/records.ts';
import { formatUsd } from '../core/money.ts';

/** The test checkout page may run only its own script, talk only to this origin, and never be framed. */
export function checkoutPageHeaders(nonce: string): Record<string, string> {
  return {
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

/** The test payment provider's "card form" for an order: two buttons that POST the outcome to this page. */
export function checkoutPage(order: OrderRecord, nonce: string): string {
  const what = order.kind === 'plan' ? `the ${order.plan} plan` : 'a credit top-up';
  return `<!doctype html><html><head><meta charset="utf-8"><title>Tollgate test checkout</title>
<style nonce="${nonce}">body { font-family: system-ui; max-width: 32rem; margin: 3rem auto }</style></head>
<body>
<h1>Test checkout</h1>
<p>Order <code>${order.id}</code>: ${what}, ${order.currency} ${formatUsd(order.amountMicros, 2)}. Status: <b>${order.status}</b>.</p>
<p>This is the test payment provider: no card is charged.</p>
<button id="pay">Pay (succeeds)</button>
<button id="decline">Pay (card declined)</button>
<pre id="out"></pre>
<p><a href="/billing">Back to billing in the dashboard</a></p>
<script nonce="${nonce}">
async function pay(body) {
  const r = await fetch(location.pathname, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  document.getElementById('out').textContent = JSON.stringify(await r.json(), null, 2);
}
document.getElementById('pay').addEventListener('click', () => pay({ outcome: 'success' }));
document.getElementById('decline').addEventListener('click', () => pay({ outcome: 'failed', reason: 'card_declined' }));
</script></body></html>`;
}
