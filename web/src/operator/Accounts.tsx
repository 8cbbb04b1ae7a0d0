import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, dateTime, type List, num, type Plan, usd } from '../api.ts';
import { planName } from '../format.ts';
import { DataTable, ErrorMessage, Field, Section } from '../ui.tsx';
import { type AdminAccountPage, query } from './operator-api.ts';
import { Pager } from './Pager.tsx';
import { Select } from './Select.tsx';

const PAGE_SIZE = 50;

/** Accounts found, filtered, sorted and paged by the server; the filters live in the address. */
export function Accounts() {
  const [params, setParams] = useSearchParams();
  const search = params.get('search') ?? '';
  const plan = params.get('plan') ?? '';
  const status = params.get('status') ?? '';
  const sort = params.get('sort') ?? 'created_at';
  const order = params.get('order') ?? 'desc';
  const offset = Number(params.get('offset') ?? 0) || 0;
  const [typed, setTyped] = useState(search);
  useEffect(() => setTyped(search), [search]);
  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params);
    for (const [name, value] of Object.entries(changes)) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    if (!('offset' in changes)) next.delete('offset');
    setParams(next);
  };
  const plans = useQuery({ queryKey: ['plans'], queryFn: () => api<List<Plan>>('/plans') });
  const accounts = useQuery({
    queryKey: ['operator', 'accounts', search, plan, status, sort, order, offset],
    queryFn: () =>
      api<AdminAccountPage>(
        `/api/admin/accounts${query({ search, plan, status, sort, order, limit: PAGE_SIZE, offset })}`,
      ),
    placeholderData: keepPreviousData,
  });
  const page = accounts.data;
  const last = page ? Math.min(offset + page.data.length, page.total) : 0;
  return (
    <>
      <h1>Accounts</h1>
      <Section title="Find accounts">
        <form
          className="inline-form"
          role="search"
          onSubmit={(event) => {
            event.preventDefault();
            set({ search: typed.trim() });
          }}
        >
          <Field
            label="E-mail or account id"
            type="search"
            value={typed}
            onChange={setTyped}
            placeholder="alice@example.com"
          />
          <button type="submit">Search</button>
        </form>
        <div className="inline-form">
          <Select
            label="Plan"
            value={plan}
            onChange={(value) => set({ plan: value })}
            options={[
              ['', 'All plans'],
              ...(plans.data?.data ?? []).map((p): [string, string] => [p.id, p.name]),
            ]}
          />
          <Select
            label="Status"
            value={status}
            onChange={(value) => set({ status: value })}
            options={[
              ['', 'All'],
              ['active', 'Active'],
              ['suspended', 'Suspended'],
            ]}
          />
          <Select
            label="Sort by"
            value={sort}
            onChange={(value) => set({ sort: value })}
            options={[
              ['created_at', 'Created'],
              ['email', 'E-mail'],
              ['last_active_at', 'Last active'],
            ]}
          />
          <Select
            label="Order"
            value={order}
            onChange={(value) => set({ order: value })}
            options={[
              ['desc', 'Descending'],
              ['asc', 'Ascending'],
            ]}
          />
        </div>
      </Section>
      <ErrorMessage error={accounts.error} />
      {page && (
        <Section title="Results">
          <p role="status">
            {page.total === 0
              ? 'No account matches.'
              : `Accounts ${offset + 1}–${last} of ${num(page.total)}`}
          </p>
          <DataTable
            label="Accounts"
            columns={['E-mail', 'Plan', 'Status', 'Balance', 'Created', 'Last active', 'Id']}
          >
            {page.data.map((account) => (
              <tr key={account.id}>
                <td>
                  <Link to={`/operator/accounts/${encodeURIComponent(account.id)}`}>{account.email}</Link>
                  {account.role === 'operator' && <span className="badge">operator</span>}
                </td>
                <td>{planName(account.plan)}</td>
                <td>{account.status}</td>
                <td className="money">
                  {account.balance_usd === undefined ? '—' : usd(account.balance_usd)}
                </td>
                <td>{dateTime(account.created_at)}</td>
                <td>{dateTime(account.last_active_at)}</td>
                <td>
                  <code>{account.id}</code>
                </td>
              </tr>
            ))}
          </DataTable>
          <Pager
            offset={offset}
            pageSize={PAGE_SIZE}
            total={page.total}
            onChange={(next) => set({ offset: String(next) })}
          />
        </Section>
      )}
    </>
  );
}
