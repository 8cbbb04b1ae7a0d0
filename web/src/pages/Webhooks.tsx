import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import {
  api,
  ApiError,
  dateTime,
  type Delivery,
  type List,
  type WebhookEndpoint,
  type WebhookEvent,
} from '../api.ts';
import { DeliveryTable } from '../DeliveryTable.tsx';
import { ErrorMessage, Field, Notice, Section, TableWrap } from '../ui.tsx';

export function Webhooks() {
  const queryClient = useQueryClient();
  const endpoint = useQuery({
    queryKey: ['webhook'],
    queryFn: async () => {
      try {
        return await api<WebhookEndpoint>('/api/webhooks/endpoint');
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }
    },
  });
  const deliveries = useQuery({
    queryKey: ['deliveries'],
    queryFn: () => api<List<Delivery>>('/api/webhooks/deliveries'),
    refetchInterval: 3_000,
  });
  const events = useQuery({
    queryKey: ['webhook-events'],
    queryFn: () => api<List<WebhookEvent>>('/api/webhooks/events'),
    refetchInterval: 3_000,
  });
  const [url, setUrl] = useState('');
  const [message, setMessage] = useState('');
  useEffect(() => {
    if (endpoint.data) setUrl(endpoint.data.url);
  }, [endpoint.data]);
  const refresh = async () => {
    await queryClient.invalidateQueries({ queryKey: ['webhook'] });
    await queryClient.invalidateQueries({ queryKey: ['deliveries'] });
    await queryClient.invalidateQueries({ queryKey: ['webhook-events'] });
  };
  const act = <V = void,>(run: (variables: V) => Promise<unknown>, done: string) => ({
    mutationFn: run,
    onSuccess: async () => {
      setMessage(done);
      await refresh();
    },
  });
  const save = useMutation(
    act(() => api('/api/webhooks/endpoint', { method: 'PUT', body: { url } }), 'Endpoint saved.'),
  );
  const remove = useMutation(
    act(() => api('/api/webhooks/endpoint', { method: 'DELETE' }), 'Endpoint removed.'),
  );
  const rotate = useMutation(
    act(() => api('/api/webhooks/endpoint/rotate-secret', { method: 'POST' }), 'Signing secret rotated.'),
  );
  const test = useMutation(act(() => api('/api/webhooks/test', { method: 'POST' }), 'Test event queued.'));
  const redeliver = useMutation(
    act(
      (id: string) => api(`/api/webhooks/deliveries/${encodeURIComponent(id)}/redeliver`, { method: 'POST' }),
      'Redelivery queued.',
    ),
  );
  const error = save.error ?? remove.error ?? rotate.error ?? test.error ?? redeliver.error;
  return (
    <>
      <h1>Webhooks</h1>
      <p>
        Tollgate posts signed <code>payment.success</code> and <code>payment.failed</code> events to your
        endpoint.
      </p>
      {message && !error && <Notice>{message}</Notice>}
      <ErrorMessage error={error ?? endpoint.error} />
      <Section title="Endpoint">
        <form
          className="inline-form endpoint-form"
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate();
          }}
        >
          <Field
            label="Endpoint URL"
            type="url"
            value={url}
            onChange={setUrl}
            required
            placeholder="https://example.com/hooks/tollgate"
          />
          <button type="submit" disabled={save.isPending}>
            Save endpoint
          </button>
          {endpoint.data && (
            <button type="button" className="danger" onClick={() => remove.mutate()}>
              Remove endpoint
            </button>
          )}
        </form>
        {endpoint.data && (
          <>
            <div className="copy-row">
              <label htmlFor="signing-secret">Signing secret</label>
              <input
                id="signing-secret"
                readOnly
                value={endpoint.data.secret}
                onFocus={(e) => e.target.select()}
              />
              <button type="button" className="secondary" onClick={() => rotate.mutate()}>
                Rotate secret
              </button>
            </div>
            <p>
              <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>
                Send test event
              </button>
            </p>
          </>
        )}
        {endpoint.data === null && <p>No endpoint is set.</p>}
      </Section>
      <Section title="Events">
        <TableWrap label="Events">
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Next retry</th>
                <th scope="col">Time</th>
              </tr>
            </thead>
            <tbody>
              {events.data?.data.map((event) => (
                <tr key={event.id}>
                  <td>
                    {event.event_type} <code>{event.id}</code>
                  </td>
                  <td>{event.status}</td>
                  <td>{event.attempts}</td>
                  <td>{event.last_status_code !== null ? `HTTP ${event.last_status_code}` : '—'}</td>
                  <td>{event.next_attempt_at ? dateTime(event.next_attempt_at) : '—'}</td>
                  <td>{dateTime(event.created_at)}</td>
                </tr>
              ))}
              {events.data?.data.length === 0 && (
                <tr>
                  <td colSpan={6}>No events yet.</td>
                </tr>
              )}
            </tbody>
          </table>
        </TableWrap>
      </Section>
      <Section title="Delivery log">
        <DeliveryTable
          label="Delivery log"
          deliveries={deliveries.data?.data}
          onRedeliver={(id) => redeliver.mutate(id)}
          empty="No deliveries yet."
        />
      </Section>
    </>
  );
}
