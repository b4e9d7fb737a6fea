// The memory home's page behaviour (no inline script: the Content-Security-Policy forbids it).
// - A checkbox with data-select-all="NAME" selects or clears every checkbox NAME of its form.
// - A button with data-needs-confirm-word stays disabled until the form's input with
//   data-confirm-word="WORD" holds exactly WORD (the server checks it again).
document.addEventListener("change", (event) => {
  const toggle = event.target;
  if (!toggle.dataset || !toggle.dataset.selectAll || !toggle.form) {
    return;
  }
  for (const box of toggle.form.querySelectorAll(`input[type=checkbox][name="${toggle.dataset.selectAll}"]`)) {
    box.checked = toggle.checked;
  }
});

function syncConfirmWord(form) {
  const input = form.querySelector("input[data-confirm-word]");
  const button = form.querySelector("[data-needs-confirm-word]");
  if (input && button) {
    button.disabled = input.value !== input.dataset.confirmWord;
  }
}

document.addEventListener("input", (event) => {
  if (event.target.form && event.target.dataset && event.target.dataset.confirmWord !== undefined) {
    syncConfirmWord(event.target.form);
  }
});

document.addEventListener("DOMContentLoaded", () => {
  for (const form of document.querySelectorAll("form")) {
    syncConfirmWord(form);
  }
});
