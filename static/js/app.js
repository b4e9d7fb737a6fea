// Behaviour of the web UI, kept out of the HTML so the Content-Security-Policy allows no inline
// script. A form with data-confirm="…" asks before it submits.
document.addEventListener("submit", (event) => {
  const message = event.target.dataset ? event.target.dataset.confirm : undefined;
  if (message && !window.confirm(message)) {
    event.preventDefault();
  }
});
