import { useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { api, type ApiKey, date, type List, num, type Usage, usd } from '../api.ts';
import { DailyChart } from '../Chart.tsx';
import { promptKinds, reasoningOf, Tokens } from '../TokenKinds.tsx';
import { ErrorMessage, Field, Section, TableWrap } from '../ui.tsx';
import { daysBetween } from './Overview.tsx';

const today = (): string => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number): string => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

function toCsv(usage: Usage): string {
  const group = usage.group_by === 'key' ? 'key_id' : usage.group_by;
  const lines = [
    `${group},requests,prompt_tokens,completion_tokens,total_tokens,cost_usd,input_tokens,cached_input_tokens,cache_write_tokens,cache_write_1h_tokens,reasoning_tokens`,
  ];
  for (const row of usage.data) {
    const key = String(row[group] ?? '').replaceAll('"', '""');
    const kinds = [
      row.input_tokens ?? row.prompt_tokens,
      row.cached_input_tokens ?? 0,
      row.cache_write_tokens ?? 0,
      row.cache_write_1h_tokens ?? 0,
      row.reasoning_tokens ?? 0,
    ].join(',');
    lines.push(
      `"${key}",${row.requests},${row.prompt_tokens},${row.completion_tokens},${row.total_tokens},${row.cost_usd},${kinds}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export function UsagePage() {
  const [from, setFrom] = useState(daysAgo(29));
  const [to, setTo] = useState(today());
  const [groupBy, setGroupBy] = useState<'day' | 'model' | 'key'>('day');
  const usage = useQuery({
    queryKey: ['usage', groupBy, from, to],
    queryFn: () => api<Usage>(`/api/usage?from=${from}&to=${to}&group_by=${groupBy}`),
    enabled: Boolean(from && to),
  });
  const data = usage.data;
  const days = data && groupBy === 'day' ? daysBetween(data.from, data.to) : [];
  const byDay = new Map((data?.data ?? []).map((row) => [row.day ?? '', row]));
  const csvHref = useMemo(
    () => (data ? URL.createObjectURL(new Blob([toCsv(data)], { type: 'text/csv' })) : undefined),
    [data],
  );
  useEffect(
    () => () => {
      if (csvHref) URL.revokeObjectURL(csvHref);
    },
    [csvHref],
  );
  const label = groupBy === 'key' ? 'Key' : groupBy === 'model' ? 'Model' : 'Day (UTC)';
  const keys = useQuery({
    queryKey: ['keys'],
    queryFn: () => api<List<ApiKey>>('/api/keys'),
    enabled: groupBy === 'key',
  });
  /** A key's name and prefix; the playground's own metering key by its name. */
  const keyLabel = (id: string): string => {
    if (id.startsWith('playground_')) return 'Playground';
    const found = keys.data?.data.find((k) => k.id === id);
    return found ? `${found.name} (${found.prefix})` : id;
  };
  return (
    <>
      <h1>Usage</h1>
      <Section title="Range">
        <div className="inline-form">
          <Field label="From" type="date" value={from} onChange={setFrom} />
          <Field label="To" type="date" value={to} onChange={setTo} />
          <div className="field">
            <label htmlFor="group-by">Group by</label>
            <select
              id="group-by"
              value={groupBy}
              onChange={(e) => setGroupBy(e.target.value as 'day' | 'model' | 'key')}
            >
              <option value="day">Day</option>
              <option value="model">Model</option>
              <option value="key">Key</option>
            </select>
          </div>
        </div>
        <p className="hint">Days are UTC: usage and daily limits start over at UTC midnight.</p>
      </Section>
      <ErrorMessage error={usage.error} />
      {data && (
        <Section title={`Usage by ${groupBy}`}>
          {groupBy === 'day' && (
            <DailyChart
              label={`Cost and tokens by day, ${data.from} to ${data.to}`}
              days={days}
              series={[
                { label: 'Cost (USD)', scale: 'usd', values: days.map((d) => byDay.get(d)?.cost_usd ?? 0) },
                {
                  label: 'Tokens',
                  scale: 'tokens',
                  values: days.map((d) => byDay.get(d)?.total_tokens ?? 0),
                },
              ]}
            />
          )}
          <p>
            <a href={csvHref} download={`tollgate-usage-${data.from}-${data.to}-by-${groupBy}.csv`}>
              Download CSV
            </a>
          </p>
          <TableWrap label="Usage table">
            <table>
              <thead>
                <tr>
                  <th scope="col">{label}</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Prompt tokens</th>
                  <th scope="col">Completion tokens</th>
                  <th scope="col">Cost</th>
                </tr>
              </thead>
              <tbody>
                {data.data.map((row) => {
                  const key = row.day ?? row.model ?? row.key_id ?? '';
                  return (
                    <tr key={key}>
                      <td>{row.day ? date(row.day) : row.key_id ? keyLabel(row.key_id) : key}</td>
                      <td>{num(row.requests)}</td>
                      <td>
                        <Tokens count={row.prompt_tokens} detail={promptKinds(row)} />
                      </td>
                      <td>
                        <Tokens count={row.completion_tokens} detail={reasoningOf(row)} />
                      </td>
                      <td>{usd(row.cost_usd)}</td>
                    </tr>
                  );
                })}
              </tbody>
              <tfoot>
                <tr>
                  <th scope="row">Total</th>
                  <td>{num(data.total.requests)}</td>
                  <td>
                    <Tokens count={data.total.prompt_tokens} detail={promptKinds(data.total)} />
                  </td>
                  <td>
                    <Tokens count={data.total.completion_tokens} detail={reasoningOf(data.total)} />
                  </td>
                  <td>{usd(data.total.cost_usd)}</td>
                </tr>
              </tfoot>
            </table>
          </TableWrap>
        </Section>
      )}
    </>
  );
}
