// Second factors and step-up on the account page. TOTP enrolment: a new
// secret with its QR code (rebuilt element by element from an allow-list, so
// the SVG can hold no script and needs no img-src beyond 'self'), confirmed by
// a first code; the recovery codes are shown this once. Step-up (RFC 9470):
// opened as /account?acr_values=…[&max_age=…], the page logs in again with the
// session's own token, the password and the code, so the session (its sid)
// is kept and reaches the level a service asked for.
import { $, messageOf, say } from './page.js';
import { api, credentialHeaders, keep, tokenClaims } from './session.js';

const JSON_POST = { method: 'POST', headers: { 'content-type': 'application/json' } };
const SVG_NS = 'http://www.w3.org/2000/svg';
const SVG_ELEMENTS = new Set(['svg', 'g', 'path', 'rect']);
const SVG_ATTRIBUTES = new Set(['viewBox', 'width', 'height', 'x', 'y', 'd', 'fill', 'stroke', 'stroke-width', 'shape-rendering', 'transform']);

/** The QR code's SVG as DOM nodes of an allow-list: no script, no handler, no link survives. */
function safeSvg(source) {
  const parsed = new DOMParser().parseFromString(source, 'image/svg+xml').documentElement;
  const copy = (node) => {
    if (!SVG_ELEMENTS.has(node.localName) || node.namespaceURI !== SVG_NS) return null;
    const element = document.createElementNS(SVG_NS, node.localName);
    for (const { name, value } of node.attributes) if (SVG_ATTRIBUTES.has(name)) element.setAttribute(name, value);
    for (const child of node.children) {
      const kept = copy(child);
      if (kept) element.append(kept);
    }
    return element;
  };
  return copy(parsed);
}

export async function showFactors() {
  const factors = await (await api('/api/v1/account/factors')).json();
  $('totp-status').textContent = factors.totp ? `An authenticator app is set up. Recovery codes left: ${factors.recoveryCodesLeft}.` : 'No authenticator app is set up.';
  $('start-totp').hidden = factors.totp === true;
}

export async function startTotp() {
  const response = await api('/api/v1/account/factors/totp', { ...JSON_POST, body: '{}' });
  if (!response.ok) return say(await messageOf(response, 'The authenticator app could not be set up. Please retry.'));
  const { secret, qrCodeSvg } = await response.json();
  const svg = safeSvg(qrCodeSvg);
  if (svg) svg.setAttribute('role', 'img'), svg.setAttribute('aria-label', 'QR code to scan with your authenticator app');
  $('totp-qr').replaceChildren(...(svg ? [svg] : []));
  $('totp-secret').textContent = secret;
  $('totp-setup').hidden = false;
  $('totp-code').focus();
}

export async function confirmTotp(event) {
  event.preventDefault();
  const code = $('totp-code').value.trim();
  if (!code) return say('Enter the code your app shows.');
  const response = await api('/api/v1/account/factors/totp/confirm', { ...JSON_POST, body: JSON.stringify({ code }) });
  if (!response.ok) return say(await messageOf(response, 'The code was not accepted. Please retry.'));
  const { recoveryCodes } = await response.json();
  $('totp-code').value = '';
  $('totp-setup').hidden = true;
  $('totp-secret').textContent = '';
  $('totp-qr').replaceChildren();
  const list = $('recovery-codes');
  list.replaceChildren(...recoveryCodes.map((recoveryCode) => Object.assign(document.createElement('li'), { textContent: recoveryCode })));
  $('recovery').hidden = false;
  $('recovery').focus();
  say('Authenticator app set up.');
  await showFactors();
}

export function forgetRecoveryCodes() {
  $('recovery-codes').replaceChildren();
  $('recovery').hidden = true;
}

/** What a service asked for (RFC 9470), from the page's address: `{ acrValues, maxAgeS }`, or null. */
export function askedLevel() {
  const query = new URLSearchParams(location.search);
  const acrValues = query.get('acr_values');
  if (!acrValues) return null;
  const maxAge = Number(query.get('max_age'));
  return { acrValues, maxAgeS: Number.isInteger(maxAge) && maxAge >= 0 && query.has('max_age') ? maxAge : undefined };
}

/** Whether the session's login meets the level asked for. */
function meets(level) {
  const { acr, auth_time: authTime } = tokenClaims();
  const fresh = level.maxAgeS === undefined || Date.now() / 1000 - authTime <= level.maxAgeS;
  return level.acrValues.split(' ').includes(acr) && fresh;
}

/** Signed in: says the level is met, or asks for the password and code that meet it. */
export function offerStepUp() {
  const level = askedLevel();
  if (!level) return;
  $('step-up-level').textContent = level.acrValues;
  $('step-up').hidden = false;
  const met = meets(level);
  $('step-up-form').hidden = met;
  if (met) $('step-up-status').textContent = `Your session now meets ${level.acrValues}.`;
  else $('step-up-password').focus();
}

/** A login refused as too weak for what was asked (RFC 9470): a second factor is needed. */
export async function needsMore(response) {
  if (response.status !== 401) return false;
  if (/insufficient_user_authentication/.test(response.headers.get('www-authenticate') ?? '')) return true;
  const body = await response.clone().json().catch(() => ({}));
  return /insufficient_user_authentication/.test(body?.$diagnoses?.[0]?.$detail ?? '');
}

export async function stepUp(event) {
  event.preventDefault();
  const level = askedLevel();
  const error = $('step-up-error');
  error.hidden = true;
  const password = $('step-up-password').value;
  const otp = $('step-up-code').value.trim();
  const body = { username: $('username').textContent, password, ...(otp && { otp }), acr_values: level.acrValues, ...(level.maxAgeS !== undefined && { max_age: level.maxAgeS }) };
  // The session's own token (and its proof) names the session the login steps up.
  // Not api(): a wrong password here is this form's answer, not the end of the session.
  const headers = { ...JSON_POST.headers, ...(await credentialHeaders('POST', '/api/v1/auth/login')) };
  const response = await fetch('/api/v1/auth/login', { method: 'POST', headers, body: JSON.stringify(body) }).catch(() => null);
  if (!response?.ok) {
    const needsCode = response !== null && (await needsMore(response));
    error.textContent = response === null ? 'The gateway cannot be reached.' : needsCode ? 'Enter the one-time code from your authenticator app as well.' : 'Wrong password or code.';
    error.hidden = false;
    (needsCode ? $('step-up-code') : $('step-up-password')).focus();
    return;
  }
  $('step-up-password').value = '';
  $('step-up-code').value = '';
  keep(await response.json());
  offerStepUp();
}
