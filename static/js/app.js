// Behaviour of the web UI, kept out of the HTML so the Content-Security-Policy allows no inline
// script. Every page works without it; it only makes some steps shorter.
document.documentElement.classList.add("js");

// A form marked "autosave" (a memory switch) is sent as soon as one of its boxes changes; with
// scripts off its own Save button sends it.
document.addEventListener("change", (event) => {
  const form = event.target.form;
  if (form && form.classList.contains("autosave") && event.target.type === "checkbox") {
    form.requestSubmit();
  }
});

// A button with data-copy="ID" copies the value of the field ID and says so in its data-done text.
document.addEventListener("click", async (event) => {
  const button = event.target.closest ? event.target.closest("button[data-copy]") : null;
  if (!button) return;
  event.preventDefault();
  const field = document.getElementById(button.dataset.copy);
  if (!field) return;
  // An input's value, or the text of any other element (a code snippet).
  const text = "value" in field ? field.value : field.textContent;
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch (error) {
    if ("select" in field) {
      field.select();
    } else {
      window.getSelection().selectAllChildren(field);
    }
    copied = document.execCommand && document.execCommand("copy");
  }
  const status = document.getElementById(`${button.dataset.copy}-status`);
  if (status) status.textContent = copied ? button.dataset.done : button.dataset.failed;
});

// A form with data-confirm="…" asks before it submits.
document.addEventListener("submit", (event) => {
  const message = event.target.dataset ? event.target.dataset.confirm : undefined;
  if (message && !window.confirm(message)) {
    event.preventDefault();
  }
});

// Text typed into a form marked data-draft is not lost when the session has ended: at submit
// the form's fields are kept in this browser (localStorage, never on the server). The next page
// tells whether the server took them: one that shows a message or a form error did, and the
// draft is dropped; the same form shown again without either (after the login page) gets its
// fields back, with the note in data-draft-restored. A draft comes back only for the user who
// typed it, within two hours; logging out drops every draft. The CSRF token and passwords are
// never kept.
(() => {
  const PREFIX = "memory-draft:";
  const MAX_AGE_MS = 2 * 60 * 60 * 1000;
  const user = document.body.dataset.user || "";
  let storage;
  try {
    storage = window.localStorage;
  } catch (error) {
    return; // storage disabled: forms work as before
  }
  const keyOf = (form) => {
    const file = form.elements.namedItem("name");
    return `${PREFIX}${location.pathname}#${form.id}:${file && file.type === "hidden" ? file.value : ""}`;
  };
  const SKIPPED_TYPES = ["password", "file", "submit", "button", "reset", "checkbox", "radio"];
  const kept = (field) => field.name && field.name !== "csrfmiddlewaretoken" && !SKIPPED_TYPES.includes(field.type);
  const drafts = () => Object.keys(storage).filter((key) => key.startsWith(PREFIX));
  const read = (key) => {
    try {
      return JSON.parse(storage.getItem(key));
    } catch (error) {
      return null;
    }
  };

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (event.defaultPrevented) return;
    if (form.matches("form.logout")) {
      drafts().forEach((key) => storage.removeItem(key));
      return;
    }
    if (!form.matches("form[data-draft]") || !user) return;
    const fields = {};
    for (const field of form.elements) {
      if (kept(field)) fields[field.name] = field.value;
    }
    try {
      storage.setItem(keyOf(form), JSON.stringify({ user, at: Date.now(), fields }));
    } catch (error) {
      // full or refused: nothing kept, nothing else changes
    }
  });

  const now = Date.now();
  drafts().forEach((key) => {
    const draft = read(key);
    if (!draft || now - draft.at > MAX_AGE_MS || (user && draft.user !== user)) storage.removeItem(key);
  });

  if (!user) {
    // The login page: say that the text waits for the next sign-in.
    const login = document.querySelector("form[data-draft-notice]");
    if (login && drafts().length) {
      const note = document.createElement("p");
      note.className = "notice draft-kept";
      note.textContent = login.dataset.draftNotice;
      login.before(note);
    }
    return;
  }
  if (document.querySelector(".messages li, form[data-draft] .errorlist")) {
    drafts().forEach((key) => storage.removeItem(key)); // the server answered the submission
    return;
  }
  document.querySelectorAll("form[data-draft]").forEach((form) => {
    const key = keyOf(form);
    const draft = read(key);
    if (!draft) return;
    storage.removeItem(key);
    for (const [name, value] of Object.entries(draft.fields)) {
      const field = form.elements.namedItem(name);
      if (field && kept(field) && "value" in field) field.value = value;
    }
    const note = document.createElement("p");
    note.className = "notice draft-restored";
    note.setAttribute("role", "status");
    note.textContent = form.dataset.draftRestored;
    form.before(note);
  });
})();
