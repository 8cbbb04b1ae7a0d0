import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link, useParams } from 'react-router';
import { api, dateTime, num, usd } from '../api.ts';
import { DailyChart } from '../Chart.tsx';
import { DeliveryTable } from '../DeliveryTable.tsx';
import { money } from '../format.ts';
import { daysBetween } from '../pages/Overview.tsx';
import { DataTable, EmptyRow, ErrorMessage, Section } from '../ui.tsx';
import { AccountActions } from './AccountActions.tsx';
import type { AccountDetail } from './operator-api.ts';

/** One account as the operator sees it: balance and grants, keys, usage, orders, webhook deliveries. */
export function AccountPage() {
  const { id = '' } = useParams();
  const path = `/api/admin/accounts/${encodeURIComponent(id)}`;
  const detail = useQuery({
    queryKey: ['operator', 'account', id],
    queryFn: () => api<AccountDetail>(`${path}/detail`),
  });
  const d = detail.data;
  return (
    <>
      <p>
        <Link to="/operator/accounts">← All accounts</Link>
      </p>
      <h1 className="wrap">{d ? d.account.email : 'Account'}</h1>
      <ErrorMessage error={detail.error} />
      {d && (
        <>
          <Section title="Summary">
            <dl className="pairs summary">
              <dt>Account id</dt>
              <dd>
                <code>{d.account.id}</code>
              </dd>
              <dt>Status</dt>
              <dd data-testid="account-status">
                {d.account.status}
                {d.account.suspended_reason ? ` (${d.account.suspended_reason})` : ''}
              </dd>
              <dt>Plan</dt>
              <dd className="cap">{d.account.plan.replace('_', ' ')}</dd>
              <dt>Balance</dt>
              <dd data-testid="operator-balance">
                {d.account.balance_usd === undefined ? '—' : usd(d.account.balance_usd)}
              </dd>
              <dt>Credit limit</dt>
              <dd>{d.account.credit_limit_usd === null ? 'none' : usd(d.account.credit_limit_usd)}</dd>
              <dt>Role</dt>
              <dd>{d.account.role}</dd>
              <dt>Created</dt>
              <dd>{dateTime(d.account.created_at)}</dd>
              <dt>Last active</dt>
              <dd>{dateTime(d.account.last_active_at)}</dd>
            </dl>
          </Section>
          <AccountActions account={d.account} />
          <Grants detail={d} />
          <AccountUsage detail={d} />
          <Keys detail={d} path={path} />
          <Orders detail={d} />
          <Deliveries detail={d} />
        </>
      )}
    </>
  );
}

function Grants({ detail }: { detail: AccountDetail }) {
  return (
    <Section title="Credit grants">
      <DataTable
        label="Credit grants"
        columns={['Kind', 'Amount', 'Remaining', 'Expires', 'Granted', 'Source']}
      >
        {detail.credits.map((grant) => (
          <tr key={grant.id}>
            <td>{grant.kind}</td>
            <td className="money">{usd(grant.amount_usd)}</td>
            <td className="money">{usd(grant.remaining_usd)}</td>
            <td>{grant.expires_at ? dateTime(grant.expires_at) : 'never'}</td>
            <td>{dateTime(grant.created_at)}</td>
            <td>{grant.source ?? '—'}</td>
          </tr>
        ))}
        <EmptyRow when={detail.credits.length === 0} columns={6}>
          No credit.
        </EmptyRow>
      </DataTable>
    </Section>
  );
}

function AccountUsage({ detail }: { detail: AccountDetail }) {
  const rows = detail.usage.last_30_days;
  const days = useMemo(() => {
    const to = new Date().toISOString().slice(0, 10);
    return daysBetween(new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10), to);
  }, []);
  const series = useMemo(() => {
    const byDay = new Map(rows.map((row) => [row.day, row]));
    return [
      { label: 'Cost (USD)', scale: 'usd' as const, values: days.map((d) => byDay.get(d)?.cost_usd ?? 0) },
      { label: 'Tokens', scale: 'tokens' as const, values: days.map((d) => byDay.get(d)?.tokens ?? 0) },
    ];
  }, [days, rows]);
  const total = rows.reduce(
    (sum, row) => ({ requests: sum.requests + row.requests, cost: sum.cost + row.cost_usd }),
    { requests: 0, cost: 0 },
  );
  return (
    <Section title="Usage, last 30 days">
      <DailyChart label="The account's cost and tokens by day, last 30 days" days={days} series={series} />
      <p>
        {num(total.requests)} requests, {usd(total.cost)} in 30 days.
      </p>
    </Section>
  );
}

function Keys({ detail, path }: { detail: AccountDetail; path: string }) {
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: (keyId: string) => api(`${path}/keys/${encodeURIComponent(keyId)}`, { method: 'DELETE' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['operator'] }),
  });
  return (
    <Section title="API keys">
      <ErrorMessage error={revoke.error} />
      <DataTable label="API keys" columns={['Name', 'Prefix', 'Status', 'Created', 'Last used', 'Actions']}>
        {detail.keys.map((key) => (
          <tr key={key.id}>
            <td>{key.name}</td>
            <td>
              <code>{key.prefix}</code>
            </td>
            <td>{key.status}</td>
            <td>{dateTime(key.created_at)}</td>
            <td>{dateTime(key.last_used_at ?? null)}</td>
            <td className="actions">
              {key.status === 'active' && (
                <button
                  type="button"
                  className="danger"
                  disabled={revoke.isPending}
                  onClick={() => revoke.mutate(key.id)}
                >
                  Revoke<span className="sr-only"> {key.name}</span>
                </button>
              )}
            </td>
          </tr>
        ))}
        <EmptyRow when={detail.keys.length === 0} columns={6}>
          No keys.
        </EmptyRow>
      </DataTable>
    </Section>
  );
}

function Orders({ detail }: { detail: AccountDetail }) {
  return (
    <Section title="Orders">
      <DataTable label="Orders" columns={['Order', 'Kind', 'Status', 'Amount', 'Created']}>
        {detail.orders.map((order) => (
          <tr key={order.order_id}>
            <td>
              <code>{order.order_id}</code>
            </td>
            <td>{order.kind === 'plan' ? `Plan ${order.plan ?? ''}` : 'Top-up'}</td>
            <td>
              {order.status}
              {order.reason ? ` (${order.reason})` : ''}
            </td>
            <td className="money">{money(order.amount, order.currency)}</td>
            <td>{dateTime(order.created_at)}</td>
          </tr>
        ))}
        <EmptyRow when={detail.orders.length === 0} columns={5}>
          No orders.
        </EmptyRow>
      </DataTable>
    </Section>
  );
}

function Deliveries({ detail }: { detail: AccountDetail }) {
  const queryClient = useQueryClient();
  const redeliver = useMutation({
    mutationFn: (id: string) =>
      api(`/api/admin/webhooks/deliveries/${encodeURIComponent(id)}/redeliver`, { method: 'POST' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['operator'] }),
  });
  return (
    <Section title="Webhook deliveries">
      {redeliver.isSuccess && <p role="status">Redelivery queued.</p>}
      <ErrorMessage error={redeliver.error} />
      <DeliveryTable
        label="Webhook deliveries"
        deliveries={detail.webhook_deliveries}
        onRedeliver={(id) => redeliver.mutate(id)}
        disabled={redeliver.isPending}
        empty="No deliveries."
      />
    </Section>
  );
}
