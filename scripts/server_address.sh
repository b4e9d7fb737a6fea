# Sourced by run.sh and serve.sh: write the address this server was started with to
# SERVER_ADDRESS_FILE (var/server-address), where the links `manage.py issue_token --sign-in-link`
# prints and the "Connect your agent" page start when PUBLIC_BASE_URL is not set
# (config/public_address.py). A wildcard host is named by the machine's host name.
record_server_address() {
  local host=$1 port=$2 scheme=${3:-http}
  case "$host" in
    0.0.0.0|::|"") host=$(hostname -f 2>/dev/null || hostname) ;;
  esac
  case "$host" in *:*) host="[$host]" ;; esac
  SERVER_ADDRESS="$scheme://$host:$port"
  local file=${SERVER_ADDRESS_FILE:-var/server-address}
  mkdir -p "$(dirname "$file")"
  printf '%s\n' "$SERVER_ADDRESS" > "$file"
}
