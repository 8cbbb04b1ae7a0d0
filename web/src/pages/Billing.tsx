import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import {
  api,
  type Checkout,
  dateTime,
  type List,
  num,
  type Order,
  type Plan,
  type SubscriptionAnswer,
  usd,
} from '../api.ts';
import { money } from '../format.ts';
import { ErrorMessage, Field, Section, Settled, TableWrap } from '../ui.tsx';
import { useAccount } from './Overview.tsx';
import {
  AlertSettingsSection,
  BillingDetailsSection,
  InvoicesSection,
  SubscriptionSection,
} from './BillingCycle.tsx';

export function Billing() {
  const account = useAccount();
  const plans = useQuery({ queryKey: ['plans'], queryFn: () => api<List<Plan>>('/plans') });
  const orders = useQuery({ queryKey: ['orders'], queryFn: () => api<List<Order>>('/api/billing/orders') });
  const [topup, setTopup] = useState('10');
  const checkout = useMutation({
    mutationFn: (body: { plan: string } | { topup_usd: number }) =>
      api<Checkout>('/api/billing/checkout', { method: 'POST', body }),
    onSuccess: (order) => window.location.assign(order.checkout_url),
  });
  const subscription = useQuery({
    queryKey: ['subscription'],
    queryFn: () => api<SubscriptionAnswer>('/api/billing/subscription'),
  });
  const current = account.data?.plan;
  const currentName = plans.data?.data.find((plan) => plan.id === current)?.name ?? current;
  return (
    <>
      <h1>Billing</h1>
      <Settled pending={account.isPending || plans.isPending || orders.isPending}>
        {account.data && (
          <p>
            Balance: <strong>{usd(account.data.balance_usd)}</strong>. Current plan:{' '}
            <strong>{currentName}</strong>
            {/* With a subscription its section shows the period, in the account's billing time. */}
            {account.data.plan_expires_at && subscription.data?.subscription === null && (
              <> until {dateTime(account.data.plan_expires_at)}</>
            )}
            .
          </p>
        )}
        <ErrorMessage error={checkout.error} />
        <SubscriptionSection />
        <Section title="Plans">
          <ErrorMessage error={plans.error} />
          <ul className="plans">
            {plans.data?.data.map((plan) => (
              <li key={plan.id} className={plan.id === current ? 'plan current' : 'plan'}>
                <h3>{plan.name}</h3>
                {plan.id === current && <p className="badge">Your plan</p>}
                <p className="big">
                  {plan.monthly_price_usd > 0
                    ? `${usd(plan.monthly_price_usd)} / month`
                    : plan.id === 'enterprise'
                      ? 'By contract'
                      : 'Free'}
                </p>
                <dl className="pairs">
                  <dt>Requests per minute</dt>
                  <dd>{num(plan.requests_per_minute)}</dd>
                  <dt>Tokens per minute</dt>
                  <dd>{num(plan.tokens_per_minute)}</dd>
                  <dt>Tokens per day</dt>
                  <dd>{num(plan.daily_tokens)}</dd>
                  <dt>Included each month</dt>
                  <dd>{usd(plan.monthly_allowance_usd)}</dd>
                  {plan.overage_price_multiplier > 0 && plan.monthly_price_usd > 0 && (
                    <>
                      <dt>Overage</dt>
                      <dd>list price × {plan.overage_price_multiplier}</dd>
                    </>
                  )}
                </dl>
                {plan.purchasable && plan.monthly_price_usd > 0 && (
                  <button
                    type="button"
                    onClick={() => checkout.mutate({ plan: plan.id })}
                    disabled={checkout.isPending}
                  >
                    {plan.id === current ? `Renew ${plan.name}` : `Buy ${plan.name}`}
                  </button>
                )}
              </li>
            ))}
          </ul>
        </Section>
        <Section title="Top up">
          <form
            className="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              checkout.mutate({ topup_usd: Number(topup) });
            }}
          >
            <Field
              label="Top-up amount (USD)"
              type="number"
              min={1}
              step="1"
              value={topup}
              onChange={setTopup}
              required
            />
            <button type="submit" disabled={checkout.isPending}>
              Top up
            </button>
          </form>
          <p className="hint">You pay on the payment provider's checkout page, then come back here.</p>
        </Section>
        <InvoicesSection />
        <BillingDetailsSection />
        <AlertSettingsSection />
        <Section title="Orders">
          <ErrorMessage error={orders.error} />
          <TableWrap label="Orders">
            <table>
              <thead>
                <tr>
                  <th scope="col">Date</th>
                  <th scope="col">What</th>
                  <th scope="col">Amount</th>
                  <th scope="col">Status</th>
                  <th scope="col">Order</th>
                </tr>
              </thead>
              <tbody>
                {orders.data?.data.map((order) => (
                  <tr key={order.order_id}>
                    <td>{dateTime(order.created_at)}</td>
                    <td>{order.kind === 'plan' ? `Plan ${order.plan ?? ''}` : 'Top-up'}</td>
                    <td>{money(order.amount, order.currency)}</td>
                    <td>
                      {order.status}
                      {order.reason ? ` (${order.reason})` : ''}
                    </td>
                    <td>
                      <code>{order.order_id}</code>
                    </td>
                  </tr>
                ))}
                {orders.data?.data.length === 0 && (
                  <tr>
                    <td colSpan={5}>No orders yet.</td>
                  </tr>
                )}
              </tbody>
            </table>
          </TableWrap>
        </Section>
      </Settled>
    </>
  );
}
