import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { FAILURE_REASONS, type FailureReason } from '../../payments/payments-service.ts';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import type { OrderRecord } from '../../store/records.ts';
import { iso, usd } from '../present.ts';
import { userOf } from './principal.ts';

export function presentOrder(order: OrderRecord): Record<string, unknown> {
  return {
    order_id: order.id,
    kind: order.kind,
    plan: order.plan,
    status: order.status,
    reason: order.reason,
    amount: usd(order.amountMicros),
    currency: order.currency,
    provider: order.provider,
    created_at: iso(order.createdAt),
    completed_at: iso(order.completedAt),
  };
}

const orderParams = { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } as const;

/** Checkout and orders; the test provider's checkout page; Stripe's webhook. */
export function billingRoutes(app: FastifyInstance, services: Services): void {
  app.post<{ Body: { plan?: string; topup_usd?: number } }>(
    '/api/billing/checkout',
    {
      config: { auth: 'user' },
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { plan: { type: 'string', maxLength: 40 }, topup_usd: { type: 'number' } },
        },
      },
    },
    async (request, reply) => {
      const baseUrl = services.config.publicUrl ?? ownAddress(app);
      const order = await services.payments.checkout(
        userOf(request).account,
        {
          ...(request.body.plan !== undefined ? { plan: request.body.plan } : {}),
          ...(request.body.topup_usd !== undefined ? { topupUsd: request.body.topup_usd } : {}),
        },
        baseUrl,
      );
      return reply.status(201).send({ ...presentOrder(order), checkout_url: order.checkoutUrl });
    },
  );

  app.get('/api/billing/orders', { config: { auth: 'user' } }, async (request) => {
    const orders = await services.store.payments.ordersOf(userOf(request).account.id);
    return { object: 'list', data: orders.map(presentOrder) };
  });

  // The test provider's "card form": anyone holding the (unguessable) checkout URL may complete it.
  app.get<{ Params: { id: string } }>(
    '/checkout/:id',
    { schema: { params: orderParams } },
    async (request, reply) => {
      const order = await services.store.payments.order(request.params.id);
      if (!order || order.provider !== 'test') throw new GatewayError('not_found', 'no such checkout');
      const nonce = randomBytes(16).toString('base64');
      return reply
        .headers(pageHeaders(nonce))
        .type('text/html; charset=utf-8')
        .send(checkoutPage(order, nonce));
    },
  );

  app.post<{ Params: { id: string }; Body: { outcome: 'success' | 'failed'; reason?: FailureReason } }>(
    '/checkout/:id',
    {
      schema: {
        params: orderParams,
        body: {
          type: 'object',
          required: ['outcome'],
          additionalProperties: false,
          properties: {
            outcome: { type: 'string', enum: ['success', 'failed'] },
            reason: { type: 'string', enum: [...FAILURE_REASONS] },
          },
        },
      },
    },
    async (request) => {
      const order = await services.store.payments.order(request.params.id);
      if (!order || order.provider !== 'test') throw new GatewayError('not_found', 'no such checkout');
      if ((await services.accounts.account(order.accountId)).status === 'suspended')
        throw new GatewayError('forbidden', 'this account is suspended');
      const { outcome, reason } = request.body;
      const applied = await services.payments.complete(
        order.id,
        outcome === 'success' ? { status: 'paid' } : { status: 'failed', reason: reason ?? 'card_declined' },
      );
      if (!applied) throw new GatewayError('conflict', `order ${order.id} is already ${order.status}`);
      return presentOrder((await services.store.payments.order(order.id)) ?? order);
    },
  );

  // Stripe signs the exact bytes it sends, so this route reads its body as text, unparsed.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    scope.post('/api/payments/stripe/webhook', async (request) => {
      const stripe = services.config.stripe;
      if (!stripe) throw new GatewayError('not_found', 'Stripe is not configured');
      const signature = request.headers['stripe-signature'];
      const result = await services.payments.handleStripeEvent(
        String(request.body),
        Array.isArray(signature) ? signature[0] : signature,
        stripe.webhookSecret,
      );
      return { received: true, result };
    });
  });
}

/**
 * Without PUBLIC_URL (outside production only): the address this server listens on, never the request's
 * Host or X-Forwarded-* headers, which the caller chooses. A wildcard listener is named as localhost.
 */
function ownAddress(app: FastifyInstance): string {
  const bound = app.server.address();
  if (bound === null || typeof bound === 'string') return 'http://localhost';
  const host = bound.address === '0.0.0.0' || bound.address === '::' ? 'localhost' : bound.address;
  return `http://${bound.family === 'IPv6' && host !== 'localhost' ? `[${host}]` : host}:${bound.port}`;
}

/** The test checkout page may run only its own script, talk only to this origin, and never be framed. */
function pageHeaders(nonce: string): Record<string, string> {
  return {
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

function checkoutPage(order: OrderRecord, nonce: string): string {
  const what = order.kind === 'plan' ? `the ${order.plan} plan` : 'a credit top-up';
  return `<!doctype html><html><head><meta charset="utf-8"><title>Tollgate test checkout</title>
<style nonce="${nonce}">body { font-family: system-ui; max-width: 32rem; margin: 3rem auto }</style></head>
<body>
<h1>Test checkout</h1>
<p>Order <code>${order.id}</code>: ${what}, ${order.currency} ${(order.amountMicros / 1e6).toFixed(2)}. Status: <b>${order.status}</b>.</p>
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
