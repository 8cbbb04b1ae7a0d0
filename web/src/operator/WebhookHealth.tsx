import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, dateTime, num } from '../api.ts';
import { DataTable, EmptyRow, ErrorMessage, Notice, Section } from '../ui.tsx';
import type { WebhookHealth } from './operator-api.ts';

/** The webhook outbox: its backlog, the endpoints that keep failing, and redelivery of their last event. */
export function WebhookHealthPage() {
  const queryClient = useQueryClient();
  const health = useQuery({
    queryKey: ['operator', 'webhooks'],
    queryFn: () => api<WebhookHealth>('/api/admin/webhooks'),
    refetchInterval: 5_000,
  });
  const redeliver = useMutation({
    mutationFn: (id: string) =>
      api(`/api/admin/webhooks/deliveries/${encodeURIComponent(id)}/redeliver`, { method: 'POST' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['operator', 'webhooks'] }),
  });
  const h = health.data;
  return (
    <>
      <h1>Webhooks</h1>
      {redeliver.isSuccess && <Notice>Redelivery queued.</Notice>}
      <ErrorMessage error={health.error ?? redeliver.error} />
      {h && (
        <>
          <Section title="Backlog">
            <dl className="pairs stats">
              <dt>Pending events</dt>
              <dd>{num(h.backlog.pending)}</dd>
              <dt>Failing (retrying)</dt>
              <dd>{num(h.backlog.failing)}</dd>
              <dt>Oldest pending</dt>
              <dd>{dateTime(h.backlog.oldest_pending_at)}</dd>
            </dl>
          </Section>
          <Section title="Failing endpoints">
            <DataTable
              label="Failing endpoints"
              columns={['Account', 'Endpoint', 'Failures in a row', 'Last error', 'Last attempt', 'Actions']}
            >
              {h.failing_endpoints.map((endpoint) => (
                <tr key={`${endpoint.account_id} ${endpoint.url}`}>
                  <td>
                    <Link to={`/operator/accounts/${encodeURIComponent(endpoint.account_id)}`}>
                      {endpoint.email}
                    </Link>
                  </td>
                  <td>
                    <code>{endpoint.url}</code>
                  </td>
                  <td>{num(endpoint.consecutive_failures)}</td>
                  <td>{endpoint.last_error ?? '—'}</td>
                  <td>{dateTime(endpoint.last_attempt_at)}</td>
                  <td className="actions">
                    {endpoint.last_delivery_id && (
                      <button
                        type="button"
                        className="secondary"
                        disabled={redeliver.isPending}
                        onClick={() => redeliver.mutate(endpoint.last_delivery_id ?? '')}
                      >
                        Redeliver<span className="sr-only"> to {endpoint.email}</span>
                      </button>
                    )}
                  </td>
                </tr>
              ))}
              <EmptyRow when={h.failing_endpoints.length === 0} columns={6}>
                No endpoint is failing.
              </EmptyRow>
            </DataTable>
          </Section>
        </>
      )}
    </>
  );
}
