// The login form: the gateway token goes in a POST body to ./login (same origin), and a session
// cookie comes back; then the page is loaded again, at the view the address names.
const form = document.getElementById('login');
const error = document.getElementById('login-error');

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  error.textContent = '';
  const input = document.getElementById('token');
  let response;
  try {
    response = await fetch('login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token: input.value }),
    });
  } catch {
    error.textContent = 'The gateway did not answer.';
    return;
  }
  if (response.ok) {
    input.value = '';
    location.reload();
    return;
  }
  const body = await response.json().catch(() => ({}));
  error.textContent =
    response.status === 401 ? 'Wrong gateway token.' : (body.error ?? `Login refused (HTTP ${response.status}).`);
  input.focus();
});
