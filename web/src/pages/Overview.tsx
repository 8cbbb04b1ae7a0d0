import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'react-router';
import {
  type AccountDetails,
  api,
  type DailyByModel,
  date,
  dateTime,
  type List,
  num,
  type RecentRequest,
  type Usage,
  usd,
} from '../api.ts';
import { type ChartSeries, DailyChart } from '../Chart.tsx';
import { promptKinds, reasoningOf, Tokens } from '../TokenKinds.tsx';
import { ErrorMessage, Section, Settled, TableWrap } from '../ui.tsx';

export function useAccount() {
  return useQuery({ queryKey: ['account'], queryFn: () => api<AccountDetails>('/api/account') });
}

/** Every day from `from` to `to` (UTC), so the chart shows quiet days as zero. */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000)
    days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}

/** One cost line per model, and the tokens of all models together, on every day of the range. */
function chartSeries(days: string[], rows: DailyByModel['data']): ChartSeries[] {
  const models = [...new Set(rows.map((row) => row.model))].sort();
  const cost = (day: string, model: string) =>
    rows.find((row) => row.day === day && row.model === model)?.cost_usd ?? 0;
  const tokens = (day: string) =>
    rows.filter((row) => row.day === day).reduce((n, row) => n + row.total_tokens, 0);
  return [
    ...(models.length > 0 ? models : ['all models']).map((model) => ({
      label: `${model} cost`,
      scale: 'usd' as const,
      values: days.map((day) => cost(day, model)),
    })),
    { label: 'Tokens', scale: 'tokens' as const, values: days.map(tokens) },
  ];
}

const KIND: Record<string, string> = {
  trial: 'Trial credit',
  topup: 'Top-up',
  plan: 'Plan allowance',
  admin: 'Adjustment',
};

export function Overview() {
  const account = useAccount();
  const daily = useQuery({
    queryKey: ['usage', 'day-model', '30d'],
    queryFn: () => api<DailyByModel>('/api/usage/daily-by-model'),
  });
  const byModel = useQuery({
    queryKey: ['usage', 'model', '30d'],
    queryFn: () => api<Usage>('/api/usage?group_by=model'),
  });
  const recent = useQuery({
    queryKey: ['recent'],
    queryFn: () => api<List<RecentRequest>>('/api/usage/recent?limit=20'),
    refetchInterval: 10_000,
  });
  const a = account.data;
  const trial = a?.credits.find((credit) => credit.kind === 'trial');
  const days = useMemo(() => (daily.data ? daysBetween(daily.data.from, daily.data.to) : []), [daily.data]);
  const series = useMemo(() => chartSeries(days, daily.data?.data ?? []), [days, daily.data]);
  return (
    <>
      <h1>Overview</h1>
      <ErrorMessage error={account.error} />
      <Settled
        pending={account.isPending || daily.isPending || byModel.isPending || recent.isPending}
        cards={4}
      >
        {a && (
          <div className="grid">
            <Section title="Balance">
              <p className="big" data-testid="balance">
                {usd(a.balance_usd)}
              </p>
              {a.held_usd > 0 && <p>{usd(a.held_usd)} held by requests in flight.</p>}
              {a.billing_message && (
                <p className="error" role="alert">
                  {a.billing_message}
                </p>
              )}
              {trial && (
                <p className="highlight">
                  Trial credit: {usd(trial.remaining_usd)} left, expires on{' '}
                  <strong>{date(trial.expires_at)}</strong>.
                </p>
              )}
              <p>
                <Link to="/billing">Top up or buy a plan</Link>
              </p>
            </Section>
            <Section title="Plan and limits">
              <p className="big cap">{a.plan.replace('_', ' ')}</p>
              {a.plan_expires_at && <p>Renews or ends on {date(a.plan_expires_at)}.</p>}
              <dl className="pairs">
                <dt>Requests per minute</dt>
                <dd>{num(a.limits.requests_per_minute)}</dd>
                <dt>Tokens per minute</dt>
                <dd>{num(a.limits.tokens_per_minute)}</dd>
                <dt>Tokens today</dt>
                <dd>
                  {num(a.daily_tokens_used)} of {num(a.limits.daily_tokens)}
                </dd>
              </dl>
              {a.limits.daily_tokens !== null && (
                <progress
                  max={a.limits.daily_tokens}
                  value={Math.min(a.daily_tokens_used, a.limits.daily_tokens)}
                  aria-label="Today's tokens against the daily cap"
                />
              )}
            </Section>
          </div>
        )}
        {a && (
          <Section title="Credit grants">
            <TableWrap label="Credit grants">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Source</th>
                    <th scope="col">Amount</th>
                    <th scope="col">Remaining</th>
                    <th scope="col">Expires</th>
                  </tr>
                </thead>
                <tbody>
                  {a.credits.map((credit) => (
                    <tr key={credit.id}>
                      <td>{KIND[credit.kind] ?? credit.kind}</td>
                      <td>{usd(credit.amount_usd)}</td>
                      <td>{usd(credit.remaining_usd)}</td>
                      <td>{date(credit.expires_at)}</td>
                    </tr>
                  ))}
                  {a.credits.length === 0 && (
                    <tr>
                      <td colSpan={4}>No usable credit.</td>
                    </tr>
                  )}
                </tbody>
              </table>
            </TableWrap>
          </Section>
        )}
        <Section title="Last 30 days">
          <ErrorMessage error={daily.error} />
          {daily.data && (
            <DailyChart
              label={`Cost by model and tokens by day, ${daily.data.from} to ${daily.data.to}`}
              days={days}
              series={series}
            />
          )}
          {byModel.data && (
            <TableWrap label="Last 30 days by model">
              <table>
                <caption>By model</caption>
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    <th scope="col">Requests</th>
                    <th scope="col">Tokens</th>
                    <th scope="col">Cost</th>
                  </tr>
                </thead>
                <tbody>
                  {byModel.data.data.map((row) => (
                    <tr key={row.model}>
                      <td>{row.model}</td>
                      <td>{num(row.requests)}</td>
                      <td>{num(row.total_tokens)}</td>
                      <td>{usd(row.cost_usd)}</td>
                    </tr>
                  ))}
                  {byModel.data.data.length === 0 && (
                    <tr>
                      <td colSpan={4}>No requests yet.</td>
                    </tr>
                  )}
                </tbody>
              </table>
            </TableWrap>
          )}
        </Section>
        <Section title="Recent requests">
          <ErrorMessage error={recent.error} />
          <RecentTable rows={recent.data?.data ?? []} />
        </Section>
      </Settled>
    </>
  );
}

export function RecentTable({ rows }: { rows: RecentRequest[] }) {
  return (
    <TableWrap label="Recent requests">
      <table>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Model</th>
            <th scope="col">Tokens</th>
            <th scope="col">Cost</th>
            <th scope="col">Status</th>
            <th scope="col">Latency</th>
            <th scope="col">Request id</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.request_id}>
              <td>{dateTime(row.created_at)}</td>
              <td>{row.model}</td>
              <td>
                <Tokens
                  count={row.total_tokens}
                  detail={[promptKinds(row), reasoningOf(row)].filter(Boolean).join(', ')}
                />
              </td>
              <td>{usd(row.cost_usd)}</td>
              <td>{row.status}</td>
              <td>{row.latency_ms} ms</td>
              <td>
                <code>{row.request_id}</code>
              </td>
            </tr>
          ))}
          {rows.length === 0 && (
            <tr>
              <td colSpan={7}>
                No requests yet. Create a key and call /v1/chat/completions, or try the Playground.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </TableWrap>
  );
}
