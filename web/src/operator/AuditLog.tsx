import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { api, dateTime, num } from '../api.ts';
import { DataTable, ErrorMessage, Field, Section } from '../ui.tsx';
import { type AuditPage, query } from './operator-api.ts';
import { Pager } from './Pager.tsx';

const PAGE_SIZE = 50;

/** Every operator action, newest first: who, what, on which account, when and from where (read-only). */
export function AuditLog() {
  const [typed, setTyped] = useState('');
  const [accountId, setAccountId] = useState('');
  const [offset, setOffset] = useState(0);
  const audit = useQuery({
    queryKey: ['operator', 'audit', accountId, offset],
    queryFn: () =>
      api<AuditPage>(`/api/admin/audit${query({ account_id: accountId, limit: PAGE_SIZE, offset })}`),
    placeholderData: keepPreviousData,
  });
  const page = audit.data;
  return (
    <>
      <h1>Audit log</h1>
      <Section title="Filter">
        <form
          className="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            setAccountId(typed.trim());
            setOffset(0);
          }}
        >
          <Field label="Account id" value={typed} onChange={setTyped} hint="Empty: every account." />
          <button type="submit">Filter</button>
        </form>
      </Section>
      <ErrorMessage error={audit.error} />
      {page && (
        <Section title="Entries">
          <p role="status">
            {page.total === 0
              ? 'No entries.'
              : `Entries ${offset + 1}–${offset + page.data.length} of ${num(page.total)}`}
          </p>
          <DataTable label="Audit log" columns={['When', 'Who', 'Action', 'Account', 'Details', 'From']}>
            {page.data.map((entry) => (
              <tr key={entry.id}>
                <td>{dateTime(entry.at)}</td>
                <td>{entry.actor}</td>
                <td>{entry.action}</td>
                <td>
                  {entry.account_id ? (
                    <Link to={`/operator/accounts/${encodeURIComponent(entry.account_id)}`}>
                      <code>{entry.account_id}</code>
                    </Link>
                  ) : (
                    '—'
                  )}
                </td>
                <td>
                  <code>{entry.details == null ? '' : JSON.stringify(entry.details)}</code>
                </td>
                <td>{entry.ip ?? '—'}</td>
              </tr>
            ))}
          </DataTable>
          <Pager offset={offset} pageSize={PAGE_SIZE} total={page.total} onChange={setOffset} />
        </Section>
      )}
    </>
  );
}
