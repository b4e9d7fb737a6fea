"""API input: strict serializers and fields (unknown fields, strings that are not strings and
numbers that are not numbers are refused), the schema that says so, and ``validated``."""

from typing import TYPE_CHECKING

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_choice_field
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

# What the mixin below is mixed into, for mypy only.
if TYPE_CHECKING:
    _Serializer = serializers.Serializer
else:
    _Serializer = object


class StrictInputMixin(_Serializer):
    # Input serializers reject unknown fields instead of silently ignoring them, and the
    # schema says so (``additionalProperties: false``, StrictInputSchema below). No docstring:
    # the schema generator would show it as the description of every input.

    # Alternative sets of fields one of which must be present, for the schema (the view
    # enforces them).
    schema_required_any_of: tuple[tuple[str, ...], ...] = ()

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def documented(field_class, schema: dict, **kwargs):
    """A ``field_class`` field that the schema describes as ``schema``: for input that a service
    checks itself, with its own error code, and the schema can still state exactly."""
    documented_class = type(f"Documented{field_class.__name__}", (field_class,), {})
    return extend_schema_field(schema)(documented_class)(**kwargs)


def enum_schema(choices) -> dict:
    """The schema of a choice field over ``choices``, so that it names and shares the enum
    component as a ``ChoiceField`` would."""
    return build_choice_field(serializers.ChoiceField(choices=choices))


class StrictInputSchema(OpenApiSerializerExtension):
    target_class = StrictInputMixin
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema["additionalProperties"] = False
        for name, field in self.target.fields.items():
            # Nested lists carry their bounds (the generator leaves them out).
            if isinstance(field, serializers.ListSerializer | serializers.ListField) and name in schema.get(
                "properties", {}
            ):
                # The stub leaves out ListSerializer's min_length/max_length (DRF 3.14 has them).
                min_length, max_length = field.min_length, field.max_length  # type: ignore[union-attr]
                low = max(min_length or 0, 0 if field.allow_empty else 1)
                if low:
                    schema["properties"][name]["minItems"] = low
                if max_length is not None:
                    schema["properties"][name]["maxItems"] = max_length
        if self.target.schema_required_any_of:
            schema["anyOf"] = [{"required": list(fields)} for fields in self.target.schema_required_any_of]
        return schema


def _strict_fields():
    class StrictCharField(serializers.CharField):
        """A CharField that refuses numbers, booleans and other non-strings instead of coercing."""

        default_error_messages = {"not_a_string": "Must be a string."}

        def to_internal_value(self, data):
            if not isinstance(data, str):
                self.fail("not_a_string")
            # The length as sent, before any trimming: what the schema's maxLength says.
            if self.max_length is not None and len(data) > self.max_length:
                self.fail("max_length", max_length=self.max_length)
            return super().to_internal_value(data)

    class StrictBooleanField(serializers.BooleanField):
        """JSON true/false only (no "yes", 1 or "true" strings)."""

        default_error_messages = {"not_a_boolean": "Must be true or false."}

        def to_internal_value(self, data):
            if not isinstance(data, bool):
                self.fail("not_a_boolean")
            return data

    class StrictIntegerField(serializers.IntegerField):
        """JSON integers only (no strings, floats or booleans)."""

        default_error_messages = {"not_an_integer": "Must be an integer."}

        def to_internal_value(self, data):
            if isinstance(data, bool) or not isinstance(data, int):
                self.fail("not_an_integer")
            return super().to_internal_value(data)

    return StrictCharField, StrictBooleanField, StrictIntegerField


StrictCharField, StrictBooleanField, StrictIntegerField = _strict_fields()


# Text holding something besides what str.strip() removes, written so that ECMAScript and Python
# read it alike (their \s differ).
NOT_ONLY_SPACE = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


class StrictCharFieldSchema(OpenApiSerializerFieldExtension):
    """A required text that is trimmed must hold something besides white space."""

    target_class = StrictCharField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request" and self.target.trim_whitespace and not self.target.allow_blank:
            schema.setdefault("pattern", NOT_ONLY_SPACE)
        return schema


def validated(serializer_class, request: Request) -> dict:
    """Validate ``request.data`` with an input serializer; errors go to the one handler."""
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return data.validated_data


class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value


class JSONObjectFieldSchema(OpenApiSerializerFieldExtension):
    target_class = JSONObjectField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "object", "additionalProperties": {}}
