import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { api, date, num, usd } from '../api.ts';
import { type ChartSeries, DailyChart } from '../Chart.tsx';
import { daysBetween } from '../pages/Overview.tsx';
import { DataTable, EmptyRow, ErrorMessage, Section } from '../ui.tsx';
import type { DailyStats, SegmentedStats } from './operator-api.ts';
import { Select } from './Select.tsx';

/** One line per segment (plan or model): `pick` of its rows on every day, zero on quiet days. */
function segmentSeries<Row extends { day: string }>(
  days: string[],
  rows: Row[],
  segment: (row: Row) => string,
  pick: (row: Row) => number,
  scale: ChartSeries['scale'],
  suffix: string,
): ChartSeries[] {
  const sums = new Map<string, Map<string, number>>();
  for (const row of rows) {
    const bySegment = sums.get(segment(row)) ?? new Map<string, number>();
    bySegment.set(row.day, (bySegment.get(row.day) ?? 0) + pick(row));
    sums.set(segment(row), bySegment);
  }
  return [...sums.keys()].sort().map((name) => ({
    label: `${name} ${suffix}`,
    scale,
    values: days.map((day) => sums.get(name)?.get(day) ?? 0),
  }));
}

const today = (): string => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number): string => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/** The spec's segmented statistics now, and traffic, spend and revenue by day, plan and model. */
export function Statistics() {
  const [range, setRange] = useState('30');
  const segmented = useQuery({
    queryKey: ['operator', 'segmented'],
    queryFn: () => api<SegmentedStats>('/api/stats/segmented'),
  });
  const daily = useQuery({
    queryKey: ['operator', 'daily', range],
    queryFn: () => api<DailyStats>(`/api/admin/stats/daily?days=${range}`),
  });
  const d = daily.data;
  const days = useMemo(() => daysBetween(daysAgo(Number(range) - 1), today()), [range]);
  const charts = useMemo(() => {
    if (!d) return undefined;
    const byDay = new Map(d.data.map((row) => [row.day, row]));
    const value = (pick: (row: DailyStats['data'][number]) => number) =>
      days.map((day) => {
        const row = byDay.get(day);
        return row ? pick(row) : 0;
      });
    return {
      money: [
        { label: 'Revenue (USD)', scale: 'usd' as const, values: value((row) => row.revenue_usd) },
        { label: 'Spend (USD)', scale: 'usd' as const, values: value((row) => row.spend_usd) },
      ],
      traffic: [
        { label: 'Requests', scale: 'count' as const, values: value((row) => row.requests) },
        { label: 'Tokens', scale: 'tokens' as const, values: value((row) => row.tokens) },
      ],
      accounts: [
        { label: 'New accounts', scale: 'count' as const, values: value((row) => row.new_accounts) },
      ],
      byPlan: segmentSeries(
        days,
        d.by_plan,
        (row) => row.plan,
        (row) => row.spend_usd,
        'usd',
        'spend',
      ),
      byModel: segmentSeries(
        days,
        d.by_model,
        (row) => row.model,
        (row) => row.spend_usd,
        'usd',
        'spend',
      ),
    };
  }, [d, days]);
  const s = segmented.data;
  return (
    <>
      <h1>Statistics</h1>
      <div className="inline-form">
        <Select
          label="Days shown"
          value={range}
          onChange={setRange}
          options={[
            ['7', 'Last 7 days'],
            ['30', 'Last 30 days'],
            ['90', 'Last 90 days'],
          ]}
        />
      </div>
      <ErrorMessage error={segmented.error ?? daily.error} />
      {s && (
        <Section title="Now">
          <dl className="pairs stats">
            <dt>Accounts</dt>
            <dd>{num(s.total_users)}</dd>
            <dt>Verified</dt>
            <dd>{num(s.verified_users)}</dd>
            <dt>Active in 7 days</dt>
            <dd>{num(s.active_users_7d)}</dd>
            <dt>Active in 30 days</dt>
            <dd>{num(s.active_users_30d)}</dd>
            <dt>Paid subscribers</dt>
            <dd>{num(s.paid_users)}</dd>
            <dt>Tokens today</dt>
            <dd>{num(s.today_tokens)}</dd>
            <dt>Cost today</dt>
            <dd>{usd(s.today_cost)}</dd>
          </dl>
        </Section>
      )}
      {d && charts && (
        <>
          <div className="grid charts">
            <Section title="Revenue and spend by day">
              <DailyChart
                label="Revenue from settled orders and spend by day"
                days={days}
                series={charts.money}
              />
            </Section>
            <Section title="Requests and tokens by day">
              <DailyChart label="Requests and tokens by day" days={days} series={charts.traffic} />
            </Section>
            <Section title="Spend by plan">
              <DailyChart label="Spend by plan and day" days={days} series={charts.byPlan} />
            </Section>
            <Section title="Spend by model">
              <DailyChart label="Spend by model and day" days={days} series={charts.byModel} />
            </Section>
            <Section title="New accounts by day">
              <DailyChart label="New accounts by day" days={days} series={charts.accounts} />
            </Section>
          </div>
          <Section title="By day">
            <DataTable
              label="Statistics by day"
              columns={['Day', 'Requests', 'Tokens', 'Spend', 'Revenue', 'New accounts']}
            >
              {[...d.data].reverse().map((row) => (
                <tr key={row.day}>
                  <td>{date(row.day)}</td>
                  <td>{num(row.requests)}</td>
                  <td>{num(row.tokens)}</td>
                  <td className="money">{usd(row.spend_usd)}</td>
                  <td className="money">{usd(row.revenue_usd)}</td>
                  <td>{num(row.new_accounts)}</td>
                </tr>
              ))}
              <EmptyRow when={d.data.length === 0} columns={6}>
                No traffic in this range.
              </EmptyRow>
            </DataTable>
          </Section>
        </>
      )}
    </>
  );
}
