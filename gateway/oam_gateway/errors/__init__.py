"""How the gateway answers errors: RFC 9457 problem documents with stable ``type`` URIs
(``problems``) and the SDK's typed errors as problems (``sdk_problems``)."""
