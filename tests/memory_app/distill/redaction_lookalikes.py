"""Ordinary text that looks like the command-line, other-language and card forms redaction
removes; none of it may change (tests/memory_app/distill/test_redaction.py and
bench/redaction_worst_case.py)."""

LOOKALIKES = [
    "We list the folders with ls -p and compare the files with diff -u old new.",
    "We search with grep -u -n TODO src and keep the output.",
    "We run docker run -u 1000:1000 -p 8080:80 app for the build.",
    "We run mysql -u root -h db billing and type the password when asked.",
    "We run mysql -u root -p billing and type it when asked.",
    "We connect with ssh -p 2222 deploy@example.com and mkdir -p /srv/app.",
    "We unpack with tar -pxvf app.tar and copy with cp -pr build dist.",
    "We use curl -u \"$API_USER\" -H 'Accept: application/json' for the check.",
    "We log in with docker login registry.example.com and the stored helper.",
    "Order 1234567890123456 shipped on 2024-01-15; invoice 2024011512304512 is paid.",
    "Card ending 1111 was declined; the test number 4111 1111 1111 1112 fails the check.",
    "Reference 4242-4242-4242-4241 and account 5500005555555550 are not cards.",
    "ISBN 978-3-16-148410-0 and ISBN 0-306-40615-2 are in the library; so is 9783161484100.",
    "Call +1 415 555 2671 or (415) 555-2671; in London +44 20 7946 0958.",
    "The timestamp 1700000000000 and the id 6011000990139425 stay.",
    "Passwort vergessen? Das neue Kennwort muss 12 Zeichen haben.",
    "¿Olvidaste tu contraseña? La contraseña debe tener 12 caracteres.",
    "Mot de passe oublié ? Le mot de passe doit contenir 12 caractères.",
    "パスワードを変更しました。パスワードを忘れた場合はリセットしてください。",
    "비밀번호를 잊으셨나요? 비밀번호를 변경했습니다.",
    "Забыли пароль? Сменить пароль можно в настройках.",
]
