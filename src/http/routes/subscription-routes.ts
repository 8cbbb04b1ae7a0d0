import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import type { InvoiceRecord, SubscriptionRecord } from '../../store/billing-repo.ts';
import { iso, usd } from '../present.ts';
import { userOf } from './principal.ts';
import { overageCharge } from '../../payments/billing-cycle.ts';
import { ALERT_EVENTS } from '../../payments/billing-alerts.ts';
import type { PlanConfig } from '../../core/config.ts';
import {
  type BillingAlerts,
  type BillingClock,
  type BillingDetails,
  type Invoice,
  type Subscription,
  type SubscriptionAnswer,
  billingAlertsSchema,
  billingClockSchema,
  billingDetailsSchema,
  invoiceSchema,
  invoicesSchema,
  subscriptionAnswerSchema,
} from '../schemas/api.ts';

type Deps = Pick<Services, 'config' | 'cycle' | 'store'>;

/** The subscription as the API shows it, dates in the account's billing time. */
export function presentSubscription(
  sub: SubscriptionRecord,
  offsetMs: number,
  plan?: PlanConfig,
  accruedMicros = 0,
): Subscription {
  const cap = sub.overageCapMicros ?? plan?.defaultOverageCapMicros ?? 0;
  const at = (ms: number | null): string | null => (ms === null ? null : iso(ms + offsetMs));
  const renews = sub.status === 'active' && !sub.cancelAtPeriodEnd;
  return {
    plan: sub.plan,
    status: sub.status,
    provider: sub.provider,
    current_period_start: iso(sub.periodStart + offsetMs),
    current_period_end: iso(sub.periodEnd + offsetMs),
    cancel_at_period_end: sub.cancelAtPeriodEnd,
    next_plan: sub.nextPlan,
    next_renewal_at: renews ? at(sub.periodEnd) : null,
    next_attempt_at: at(sub.nextAttemptAt),
    failed_attempts: sub.failedAttempts,
    grace_until: at(sub.graceUntil),
    test_card_declines: sub.testCardDeclines,
    overage_price_multiplier: (plan?.overageBasisPoints ?? 0) / 10_000,
    overage_cap_usd: cap === null ? null : usd(cap),
    overage_cap_is_default: sub.overageCapMicros === null,
    overage_accrued_list_usd: usd(accruedMicros),
    overage_accrued_usd: plan ? usd(overageCharge(plan, accruedMicros)) : 0,
    overage_owed_list_usd: usd(sub.overageOwedMicros),
  };
}

export function presentInvoice(invoice: InvoiceRecord, seller: string): Invoice {
  return {
    id: invoice.id,
    object: 'invoice' as const,
    number: `TG-${String(invoice.number).padStart(6, '0')}`,
    order_id: invoice.orderId,
    issued_at: iso(invoice.issuedAt),
    currency: invoice.currency,
    total_usd: usd(invoice.totalMicros),
    lines: invoice.lines.map((line) => ({
      description: line.description,
      amount_usd: usd(line.amountMicros),
    })),
    seller: { name: seller, email: null, address: null, tax_id: null },
    buyer: {
      name: invoice.buyer.name,
      email: invoice.buyer.email,
      address: invoice.buyer.address,
      tax_id: invoice.buyer.taxId,
    },
  };
}

const SELLER = 'Tollgate';

/** `/api/billing/subscription…` and `/api/billing/details`: the account's own subscription and details. */
export const subscriptionRoutes: FastifyPluginAsync<Deps> = async (app, services) => {
  const user = { config: { auth: 'user' } } as const;
  const answer = { response: { 200: subscriptionAnswerSchema } } as const;
  const show = async (accountId: string): Promise<SubscriptionAnswer> => {
    const sub = await services.cycle.subscription(accountId);
    if (!sub) return { object: 'subscription' as const, subscription: null };
    const offset = await services.store.billing.clockOffset(accountId);
    const accrued = await services.store.billing.accruedOverage(accountId);
    const plan = services.config.plans.get(sub.plan);
    return { object: 'subscription' as const, subscription: presentSubscription(sub, offset, plan, accrued) };
  };

  app.put<{ Body: { cap_usd: number | null } }>(
    '/overage-cap',
    {
      ...user,
      schema: {
        body: {
          type: 'object',
          required: ['cap_usd'],
          additionalProperties: false,
          properties: { cap_usd: { type: ['number', 'null'], minimum: 0, maximum: 1_000_000 } },
        },
        ...answer,
      },
    },
    async (request) => {
      const id = userOf(request).account.id;
      const cap = request.body.cap_usd;
      await services.cycle.setOverageCap(id, cap === null ? null : Math.round(cap * 100) * 10_000);
      return show(id);
    },
  );

  app.get('/subscription', { ...user, schema: answer }, async (request) => show(userOf(request).account.id));

  app.post('/subscription/cancel', { ...user, schema: answer }, async (request) => {
    const id = userOf(request).account.id;
    await services.cycle.cancel(id);
    return show(id);
  });

  app.post('/subscription/resume', { ...user, schema: answer }, async (request) => {
    const id = userOf(request).account.id;
    await services.cycle.resume(id);
    return show(id);
  });

  app.post<{ Body: { plan: string } }>(
    '/subscription/change',
    {
      ...user,
      schema: {
        body: {
          type: 'object',
          required: ['plan'],
          additionalProperties: false,
          properties: { plan: { type: 'string', maxLength: 40 } },
        },
        ...answer,
      },
    },
    async (request) => {
      const id = userOf(request).account.id;
      await services.cycle.changePlan(id, request.body.plan);
      return show(id);
    },
  );

  app.put<{ Body: { declines: boolean } }>(
    '/test-card',
    {
      ...user,
      schema: {
        body: {
          type: 'object',
          required: ['declines'],
          additionalProperties: false,
          properties: { declines: { type: 'boolean' } },
        },
        ...answer,
      },
    },
    async (request) => {
      const id = userOf(request).account.id;
      await services.cycle.setTestCard(id, request.body.declines);
      return show(id);
    },
  );

  const alertSettings = async (accountId: string): Promise<BillingAlerts> => {
    const settings = await services.store.billing.alertSettings(accountId);
    return {
      low_balance_usd: settings.lowBalanceMicros === null ? null : usd(settings.lowBalanceMicros),
      webhook_events: settings.events,
    };
  };

  app.get('/alerts', { ...user, schema: { response: { 200: billingAlertsSchema } } }, async (request) =>
    alertSettings(userOf(request).account.id),
  );

  app.put<{ Body: { low_balance_usd: number | null; webhook_events: string[] } }>(
    '/alerts',
    {
      ...user,
      schema: {
        body: {
          type: 'object',
          required: ['low_balance_usd', 'webhook_events'],
          additionalProperties: false,
          properties: {
            low_balance_usd: { type: ['number', 'null'], minimum: 0, maximum: 1_000_000 },
            webhook_events: {
              type: 'array',
              maxItems: 10,
              items: { type: 'string', enum: [...ALERT_EVENTS] },
            },
          },
        },
        response: { 200: billingAlertsSchema },
      },
    },
    async (request) => {
      const id = userOf(request).account.id;
      const low = request.body.low_balance_usd;
      await services.store.billing.putAlertSettings(
        id,
        low === null ? null : Math.round(low * 100) * 10_000,
        [...new Set(request.body.webhook_events)],
      );
      return alertSettings(id);
    },
  );

  app.get(
    '/details',
    { ...user, schema: { response: { 200: billingDetailsSchema } } },
    async (request): Promise<BillingDetails> => {
      const details = await services.store.billing.details(userOf(request).account.id);
      return { name: details.name, address: details.address, tax_id: details.taxId };
    },
  );

  app.put<{ Body: { name?: string | null; address?: string | null; tax_id?: string | null } }>(
    '/details',
    {
      ...user,
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            name: { type: ['string', 'null'], maxLength: 200 },
            address: { type: ['string', 'null'], maxLength: 1000 },
            tax_id: { type: ['string', 'null'], maxLength: 64 },
          },
        },
        response: { 200: billingDetailsSchema },
      },
    },
    async (request): Promise<BillingDetails> => {
      const blank = (value: string | null | undefined): string | null => value?.trim() || null;
      const details = {
        name: blank(request.body.name),
        address: blank(request.body.address),
        taxId: blank(request.body.tax_id),
      };
      await services.store.billing.putDetails(userOf(request).account.id, details);
      return { name: details.name, address: details.address, tax_id: details.taxId };
    },
  );
};

/** `/api/invoices`: the account's invoices, newest first, and one by id. */
export const invoiceRoutes: FastifyPluginAsync<Deps> = async (app, services) => {
  app.get(
    '/',
    { config: { auth: 'user' }, schema: { response: { 200: invoicesSchema } } },
    async (request) => {
      const invoices = await services.store.billing.invoicesOf(userOf(request).account.id);
      return { object: 'list' as const, data: invoices.map((invoice) => presentInvoice(invoice, SELLER)) };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/:id',
    {
      config: { auth: 'user' },
      schema: {
        params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } },
        response: { 200: invoiceSchema },
      },
    },
    async (request) => {
      const invoice = await services.store.billing.invoice(request.params.id);
      if (!invoice || invoice.accountId !== userOf(request).account.id)
        throw new GatewayError('not_found', 'no such invoice');
      return presentInvoice(invoice, SELLER);
    },
  );
};

/** `/api/admin/billing`: the test billing clock. */
export const billingClockRoutes: FastifyPluginAsync<Deps> = async (app, services) => {
  app.post<{ Body: { account_id: string; days: number } }>(
    '/advance',
    {
      config: { auth: 'admin' },
      schema: {
        body: {
          type: 'object',
          required: ['account_id', 'days'],
          additionalProperties: false,
          properties: {
            account_id: { type: 'string', maxLength: 100 },
            days: { type: 'integer', minimum: 1, maximum: 400 },
          },
        },
        response: { 200: billingClockSchema },
      },
    },
    async (request): Promise<BillingClock> => {
      const { account_id: accountId, days } = request.body;
      const { billingNow } = await services.cycle.advance(accountId, days);
      return { account_id: accountId, billing_time: iso(billingNow), ...(await subscriptionOf(accountId)) };
    },
  );
  const subscriptionOf = async (accountId: string): Promise<Pick<BillingClock, 'subscription'>> => {
    const sub = await services.cycle.subscription(accountId);
    const offset = await services.store.billing.clockOffset(accountId);
    const plan = sub && services.config.plans.get(sub.plan);
    return { subscription: sub ? presentSubscription(sub, offset, plan) : null };
  };
};
