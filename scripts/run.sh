#!/usr/bin/env bash
# Start the service on the embedded SQLite default (unless DATABASE_URL is set).
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=${1:-127.0.0.1}
PORT=${2:-8000}
export DEBUG=${DEBUG:-1}
# runserver serves every request in a thread of its own, and a thread's database connection is
# never handed to another: kept open for reuse (DB_CONN_MAX_AGE), each one would stay open until
# garbage collection found it, and PostgreSQL would run out of connections under load. Here
# each connection is closed when its request ends.
export DB_CONN_MAX_AGE=0
PY=.venv/bin/python
. scripts/server_address.sh
record_server_address "$HOST" "$PORT"
if [ -n "${PUBLIC_BASE_URL:-}" ]; then
  links_hint="Printed links start with PUBLIC_BASE_URL, $PUBLIC_BASE_URL."
else
  links_hint="Printed links (issue_token --sign-in-link) start with $SERVER_ADDRESS; PUBLIC_BASE_URL sets another address."
fi
$PY manage.py migrate --noinput >/dev/null
$PY manage.py createcachetable  # only does something with CACHE_BACKEND=database
if [ -n "${DJANGO_SUPERUSER_USERNAME:-}" ] && [ -n "${DJANGO_SUPERUSER_PASSWORD:-}" ]; then
  $PY manage.py shell -c "
import os
from django.contrib.auth import get_user_model
user, _ = get_user_model().objects.get_or_create(username=os.environ['DJANGO_SUPERUSER_USERNAME'])
user.is_staff = user.is_superuser = True
user.set_password(os.environ['DJANGO_SUPERUSER_PASSWORD'])
user.save()
" >/dev/null
  login_hint="Log in as '$DJANGO_SUPERUSER_USERNAME' with the password from DJANGO_SUPERUSER_PASSWORD."
else
  login_hint="No account yet? In another terminal run:
    DEBUG=1 .venv/bin/python manage.py createsuperuser
  (or start with DJANGO_SUPERUSER_USERNAME=admin DJANGO_SUPERUSER_PASSWORD=... make run)"
fi
cat <<MSG

Memory service on http://$HOST:$PORT/
  web UI    http://$HOST:$PORT/
  admin     http://$HOST:$PORT/admin/
  API docs  http://$HOST:$PORT/api/docs/
$login_hint
  API token: DEBUG=1 .venv/bin/python manage.py issue_token USERNAME [--create-user --sign-in-link]
  $links_hint

MSG
exec $PY manage.py runserver "$HOST:$PORT" "${@:3}"
