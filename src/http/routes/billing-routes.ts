import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { FAILURE_REASONS, type FailureReason } from '../../payments/payments-service.ts';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import type { OrderRecord } from '../../core/records.ts';
import { checkoutPage, checkoutPageHeaders } from '../checkout-page.ts';
import { iso, usd } from '../present.ts';
import { listenOrigin } from '../link-origin.ts';
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

/** `/api/billing`: checkout and the account's orders. */
export const billingRoutes: FastifyPluginAsync<Pick<Services, 'config' | 'payments'>> = async (
  app,
  services,
) => {
  app.post<{ Body: { plan?: string; topup_usd?: number } }>(
    '/checkout',
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
      const baseUrl = services.config.publicUrl ?? listenOrigin(app);
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

  app.get('/orders', { config: { auth: 'user' } }, async (request) => {
    const orders = await services.payments.orders(userOf(request).account.id);
    return { object: 'list', data: orders.map(presentOrder) };
  });
};

/** `/checkout`: the test provider's "card form"; anyone holding the (unguessable) checkout URL may complete it. */
export const checkoutPageRoutes: FastifyPluginAsync<Pick<Services, 'payments'>> = async (app, services) => {
  app.get<{ Params: { id: string } }>('/:id', { schema: { params: orderParams } }, async (request, reply) => {
    const order = await services.payments.testCheckout(request.params.id);
    const nonce = randomBytes(16).toString('base64');
    return reply
      .headers(checkoutPageHeaders(nonce))
      .type('text/html; charset=utf-8')
      .send(checkoutPage(order, nonce));
  });

  app.post<{ Params: { id: string }; Body: { outcome: 'success' | 'failed'; reason?: FailureReason } }>(
    '/:id',
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
};

/**
 * `/api/payments/stripe`: Stripe's webhook. Stripe signs the exact bytes it sends, so this plugin's scope reads
 * every body as text, unparsed (its content-type parsers are its own; the rest of the app keeps JSON).
 */
export const stripeWebhookRoutes: FastifyPluginAsync<Pick<Services, 'config' | 'payments'>> = async (
  app,
  services,
) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.post('/webhook', async (request) => {
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
};
