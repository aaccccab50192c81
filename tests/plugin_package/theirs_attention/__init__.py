"""An attention from outside the harness (a test fixture): softmax attention with a temperature."""
