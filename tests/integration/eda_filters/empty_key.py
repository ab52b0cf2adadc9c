"""An ansible-rulebook event filter for test_eda_autoplan.py (``--filter-dir``): gives each event an empty key, which
ansible-rulebook 1.3.2's event reader cannot read (dpath's InvalidKeyName once the event is in the rule engine). The
reader then ends without a word, as it did on gpu_demand's events without a pool label before issue 37: the way to
stop it that a user could meet."""


def main(event):
    event["unreadable"] = {"": True}
    return event
