// The account page's limits table: the caller's own quotas on each route, as
// the gateway counts them (used, remaining, when it is whole again). Set as
// text only, like everything the page shows.

const $ = (id) => document.getElementById(id);

const WINDOWS = { second: 'a second', minute: 'a minute', hour: 'an hour', day: 'a day', month: 'a month' };

/** Fills the limits table; `api` is the page's authenticated fetch, `cell` its table-cell maker. */
export async function showLimits(api, cell) {
  const { limits } = await (await api('/api/v1/account/limits')).json();
  const body = $('limits');
  body.replaceChildren();
  $('limits-section').hidden = limits.length === 0;
  for (const limit of limits) {
    const row = document.createElement('tr');
    row.dataset.limit = `${limit.route}/${limit.limit}`;
    cell(row, limit.route, 'Service');
    cell(row, limit.quota === 'unlimited' ? `${limit.limit}: unlimited` : `${limit.limit}: ${limit.quota} ${WINDOWS[limit.per]}`, 'Limit');
    cell(row, limit.tier, 'Plan');
    cell(row, limit.used === null ? '—' : String(limit.used), 'Used');
    cell(row, limit.remaining === null ? '—' : String(limit.remaining), 'Remaining');
    cell(row, limit.resetsAt === null ? '—' : new Date(limit.resetsAt).toLocaleString(), 'Whole again');
    body.append(row);
  }
}
