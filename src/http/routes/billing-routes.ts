import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { FAILURE_REASONS, type FailureReason } from '../../payments/payments-service.ts';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import type { OrderRecord } from '../../store/records.ts';
import { checkoutPage, checkoutPageHeaders } from '../checkout-page.ts';
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
export function billingRoutes(app: FastifyInstance, services: Pick<Services, 'config' | 'payments'>): void {
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
    const orders = await services.payments.orders(userOf(request).account.id);
    return { object: 'list', data: orders.map(presentOrder) };
  });

  // The test provider's "card form": anyone holding the (unguessable) checkout URL may complete it.
  app.get<{ Params: { id: string } }>(
    '/checkout/:id',
    { schema: { params: orderParams } },
    async (request, reply) => {
      const order = await services.payments.testCheckout(request.params.id);
      const nonce = randomBytes(16).toString('base64');
      return reply
        .headers(checkoutPageHeaders(nonce))
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
      const { outcome, reason } = request.body;
      const order = await services.payments.completeTestCheckout(
        request.params.id,
        outcome === 'success' ? { status: 'paid' } : { status: 'failed', reason: reason ?? 'card_declined' },
      );
      return presentOrder(order);
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
