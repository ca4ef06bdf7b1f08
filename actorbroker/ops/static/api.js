// The admin API as the dashboard uses it: JSON over fetch, with the token the
// operator typed (kept for this tab only) when the listener asks for one.

const TOKEN_KEY = "actorbroker.token";

export class Unauthorized extends Error {}

// A refusal of the API, with its reason (the JSON body's "error") when it gave one.
export class ApiError extends Error {}

function headers() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

async function call(method, path) {
  // Relative to the page, so that a dashboard served under a prefix still works.
  const response = await fetch(`api/v1/${path}`, { method, headers: headers(), cache: "no-store" });
  if (response.status === 401) throw new Unauthorized(path);
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new ApiError(`HTTP ${response.status}${body.error ? `: ${body.error}` : ""}`);
  }
  return response.json();
}

export const get = (path) => call("GET", path);
export const post = (path) => call("POST", path);
