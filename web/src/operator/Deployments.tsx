import { useQuery } from '@tanstack/react-query';
import { api, type List, num } from '../api.ts';
import { DataTable, EmptyRow, ErrorMessage, Section } from '../ui.tsx';
import { type DeploymentHealth, ms, percent } from './operator-api.ts';

const CIRCUIT: Record<DeploymentHealth['circuit'], string> = {
  closed: 'closed (healthy)',
  half_open: 'half open (probing)',
  open: 'open (skipped)',
};

/** Every public model's deployments as the gateway measures them (no upstream is called to draw this). */
export function Deployments() {
  const deployments = useQuery({
    queryKey: ['operator', 'deployments'],
    queryFn: () => api<List<DeploymentHealth>>('/api/admin/deployments'),
    refetchInterval: 5_000,
  });
  return (
    <>
      <h1>Deployments</h1>
      <p>Measured by this gateway instance over the last 5 minutes; refreshed every 5 seconds.</p>
      <ErrorMessage error={deployments.error} />
      <Section title="Deployments by model">
        <DataTable
          label="Deployments"
          columns={[
            'Model',
            'Deployment',
            'Provider',
            'Circuit',
            'Requests (5 min)',
            'Error rate',
            'Latency p50',
            'TTFT p50',
          ]}
        >
          {deployments.data?.data.map((row) => (
            <tr key={`${row.model}/${row.deployment}`} className={row.circuit === 'closed' ? '' : 'bad'}>
              <td>{row.model}</td>
              <td>
                {row.deployment} <span className="hint">{row.upstream_model}</span>
              </td>
              <td>{row.provider}</td>
              <td>{CIRCUIT[row.circuit]}</td>
              <td>{num(row.requests_5m)}</td>
              <td>{row.requests_5m === 0 ? '—' : percent(row.error_rate_5m)}</td>
              <td>{ms(row.latency_p50_ms)}</td>
              <td>{ms(row.ttft_p50_ms)}</td>
            </tr>
          ))}
          <EmptyRow when={deployments.data?.data.length === 0} columns={8}>
            No deployments are configured.
          </EmptyRow>
        </DataTable>
      </Section>
    </>
  );
}
