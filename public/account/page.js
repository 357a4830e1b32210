// What every part of the account page shares: finding an element, the
// message line, the `$message` of an error body, and click handlers whose
// failure is shown rather than lost in the console. Everything shown is set
// as text, never as HTML.

export const $ = (id) => document.getElementById(id);

/** The `$message` of a Gatehouse error body, or a fallback. */
export async function messageOf(response, fallback) {
  try {
    const body = await response.json();
    return body?.$diagnoses?.[0]?.$message ?? fallback;
  } catch {
    return fallback;
  }
}

export function say(text) {
  $('message').textContent = text;
}

/** A click's failure is shown, not lost in the console. */
export function guarded(handler) {
  return (event) => handler(event).catch((error) => {
    if (error?.message !== 'signed out') say('Something went wrong. Please retry.');
  });
}

/** A cell; `heading` labels it where a phone shows each key as a card (account.css). */
export function cell(row, text, heading) {
  const td = document.createElement('td');
  td.textContent = text;
  if (heading) td.dataset.label = heading;
  row.append(td);
  return td;
}
