import { dateTime, type Delivery } from './api.ts';
import { DataTable } from './ui.tsx';

/** Webhook delivery attempts, newest first, each with a button that queues its event again. */
export function DeliveryTable(props: {
  label: string;
  deliveries: Delivery[] | undefined;
  onRedeliver: (id: string) => void;
  disabled?: boolean;
  empty: string;
}) {
  return (
    <DataTable label={props.label} columns={['Time', 'Event', 'Attempt', 'Result', 'Actions']}>
      {props.deliveries?.map((delivery) => (
        <tr key={delivery.id}>
          <td>{dateTime(delivery.created_at)}</td>
          <td>
            <code>{delivery.event_id}</code>
          </td>
          <td>{delivery.attempt}</td>
          <td>
            {delivery.status_code !== null ? `HTTP ${delivery.status_code}` : 'no answer'}
            {delivery.error ? ` — ${delivery.error}` : ''}
            {delivery.latency_ms !== null ? ` in ${delivery.latency_ms} ms` : ''}
          </td>
          <td>
            <button
              type="button"
              className="secondary"
              disabled={props.disabled ?? false}
              onClick={() => props.onRedeliver(delivery.id)}
            >
              Redeliver {delivery.event_id}
            </button>
          </td>
        </tr>
      ))}
      {props.deliveries?.length === 0 && (
        <tr>
          <td colSpan={5}>{props.empty}</td>
        </tr>
      )}
    </DataTable>
  );
}
