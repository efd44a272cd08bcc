//! The findings about a tool-using assistant's actions and grounding (docs/METHODS.md,
//! "Actions" and "Grounding": rejected and unconfirmed state changes, recovered lookups, values
//! of unavailable records, miscounts, answers that use nothing their lookup returned), on small runs in the OpenAI Chat Completions shape built here: a
//! system policy, user turns, assistant tool calls answered by tool messages.

use falat::diagnosis::Signal;
use falat::model::Trajectory;
use falat::substrate::{Substrate, signals};
use serde_json::{Value, json};

/// The signals these tests watch: the new ones and the generic failure signals they refine.
const WATCHED: [Signal; 8] = [
    Signal::RejectedAction,
    Signal::ArgumentMismatch,
    Signal::UnconfirmedAction,
    Signal::UnavailableValue,
    Signal::CountMismatch,
    Signal::IgnoredResult,
    Signal::FailedAction,
    Signal::IgnoredToolError,
];

const POLICY_CONFIRM: &str = "# Store agent policy\n- Before taking consequential actions that update the \
    database (cancel, modify, return), you have to list the action detail and obtain explicit user \
    confirmation (yes) to proceed.\n- You can look up orders and products.";
const POLICY_PLAIN: &str = "# Store agent policy\n- You can look up, cancel and modify orders.";

use crate::chat::{assistant, call, evidence, falat, steps_with, system, user};

fn load(messages: Vec<Value>) -> Trajectory {
    let t = crate::chat::load(messages);
    assert_eq!(t.source, falat::model::SourceFormat::OpenAiChat);
    t
}

/// Every watched finding of the run, as `(step, signal)` in step order.
fn findings(t: &Trajectory) -> Vec<(usize, Signal)> {
    crate::chat::findings(t).into_iter().filter(|(_, s)| WATCHED.contains(s)).collect()
}

fn messages(parts: Vec<Vec<Value>>) -> Vec<Value> {
    parts.into_iter().flatten().collect()
}

#[test]
fn a_state_change_the_tool_rejects_is_found_at_the_call() {
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Please cancel order #W100, I no longer need it.")],
        call(
            "c1",
            "get_order_details",
            json!({"order_id": "#W100"}),
            r##"{"order_id": "#W100", "status": "delivered"}"##,
        ),
        call(
            "c2",
            "cancel_pending_order",
            json!({"order_id": "#W100", "reason": "no longer needed"}),
            "Error: non-pending order cannot be cancelled",
        ),
        vec![assistant("Sorry, I am unable to cancel it: the order was already delivered.")],
    ]));
    assert_eq!(t.steps[4].tool_name.as_deref(), Some("cancel_pending_order"));
    // The rejected change is the call's own finding (not the generic failed action), and the
    // assistant's reply names the failure.
    assert_eq!(findings(&t), vec![(4, Signal::RejectedAction)]);
    assert_eq!(
        evidence(&t, 4, Signal::RejectedAction),
        "cancel_pending_order changes state and the tool rejects it at step 5: Error: non-pending order cannot be cancelled"
    );
}

/// Replaces the run's system policy: its step and the assistant's role text the loader copied it to.
fn set_policy(t: &mut Trajectory, policy: &str) {
    t.steps[0].content = policy.into();
    for a in t.agents.iter_mut().filter(|a| a.role.is_some()) {
        a.role = Some(policy.into());
    }
}

fn cancel_run(confirmation: Option<&str>) -> Trajectory {
    let mut parts = vec![
        vec![system(POLICY_CONFIRM), user("I want to cancel order #W200.")],
        call(
            "c1",
            "get_order_details",
            json!({"order_id": "#W200"}),
            r##"{"order_id": "#W200", "status": "pending"}"##,
        ),
        vec![assistant("Order #W200 is pending and can be cancelled. Do you want me to cancel it?")],
    ];
    if let Some(reply) = confirmation {
        parts.push(vec![user(reply)]);
    }
    parts.push(call(
        "c2",
        "cancel_pending_order",
        json!({"order_id": "#W200", "reason": "no longer needed"}),
        r##"{"order_id": "#W200", "status": "cancelled"}"##,
    ));
    parts.push(vec![assistant("Your order #W200 has been cancelled.")]);
    load(messages(parts))
}

#[test]
fn a_state_change_without_the_confirmation_the_policy_asks_for_is_found_and_a_confirmed_one_is_not() {
    // The user answers with a question, not a yes: the cancellation goes ahead unconfirmed.
    let t = cancel_run(Some("What is the refund amount?"));
    assert_eq!(t.steps[6].tool_name.as_deref(), Some("cancel_pending_order"));
    assert_eq!(findings(&t), vec![(6, Signal::UnconfirmedAction)]);
    assert_eq!(
        evidence(&t, 6, Signal::UnconfirmedAction),
        "cancel_pending_order changes state without the user's confirmation that the policy at step 0 asks for: \
         no user turn confirms after its question at step 4"
    );
    // No user turn at all between the question and the call.
    let t = cancel_run(None);
    assert_eq!(findings(&t), vec![(5, Signal::UnconfirmedAction)]);
    // The same run with a confirming user turn: no finding.
    let t = cancel_run(Some("Yes, please go ahead."));
    assert_eq!(findings(&t), vec![]);
    // A policy that asks for no confirmation: no finding either.
    let mut plain = cancel_run(Some("What is the refund amount?"));
    set_policy(&mut plain, POLICY_PLAIN);
    assert_eq!(findings(&plain), vec![]);
    // Other ways a policy asks for the user's go-ahead: an explicit "yes", consent, approval.
    for policy in [
        "Before any cancellation you MUST read the details back and get an explicit 'yes' in the user's next message.",
        "Never cancel an order without the customer's consent.",
        "Refunds and cancellations require the user's approval.",
    ] {
        let mut t = cancel_run(Some("What is the refund amount?"));
        set_policy(&mut t, policy);
        assert_eq!(findings(&t), vec![(6, Signal::UnconfirmedAction)], "{policy}");
    }
}

#[test]
fn handing_the_user_over_needs_no_confirmation_but_a_change_does() {
    // Under the same policy, the assistant hands a user over to a human agent without asking:
    // a transfer changes none of the user's data, so no confirmation is missing.
    let t = load(messages(vec![
        vec![system(POLICY_CONFIRM), user("Change the address of order #W200 and also exchange the speaker.")],
        call(
            "c1",
            "get_order_details",
            json!({"order_id": "#W200"}),
            r##"{"order_id": "#W200", "status": "processed"}"##,
        ),
        vec![assistant("Order #W200 is already processed, so I cannot change it. Would you like anything else?")],
        vec![user("Then I want to talk to a person.")],
        call(
            "c2",
            "transfer_to_human_agents",
            json!({"summary": "User wants to change the address of a processed order."}),
            "Transfer successful",
        ),
        vec![assistant("I have transferred you to a human agent.")],
    ]));
    assert_eq!(t.steps[6].tool_name.as_deref(), Some("transfer_to_human_agents"));
    assert_eq!(findings(&t), vec![]);
    // The cancellation in the same place is a change the policy asks a "yes" for.
    let t = cancel_run(Some("Then I want to talk to a person."));
    assert_eq!(findings(&t), vec![(6, Signal::UnconfirmedAction)]);
}

fn lookup_run(then: Vec<Value>) -> Trajectory {
    load(messages(vec![
        vec![system(POLICY_PLAIN), user("My email is jo.doe@example.com; where is my order?")],
        call("c1", "find_user_id_by_email", json!({"email": "jo.doe@exmple.com"}), "Error: user not found"),
        then,
        vec![assistant("I found your account.")],
    ]))
}

#[test]
fn a_lookup_error_recovered_by_a_retry_is_not_an_ignored_error() {
    // The agent corrects the address and the same lookup succeeds.
    let t = lookup_run(call("c2", "find_user_id_by_email", json!({"email": "jo.doe@example.com"}), "jo_doe_1234"));
    assert_eq!(t.steps[2].tool_name.as_deref(), Some("find_user_id_by_email"));
    assert_eq!(findings(&t), vec![]);
    // The agent goes on with another tool after the error: that is ignoring it. Its closing
    // line then tells the user something the product list it just read does not say.
    let t = lookup_run(call("c2", "list_all_product_types", json!({}), r#"{"Jigsaw": "1808611083"}"#));
    assert_eq!(findings(&t), vec![(4, Signal::IgnoredToolError), (6, Signal::IgnoredResult)]);
    // The retry fails again: not recovered, and the closing "I found your account" ignores the
    // second error. The retry itself reacts to the first error: it is no ignoring of it.
    let t =
        lookup_run(call("c2", "find_user_id_by_email", json!({"email": "jo@example.com"}), "Error: user not found"));
    assert_eq!(findings(&t), vec![(6, Signal::IgnoredToolError)]);
}

const POLICY_PAY: &str = "# Billing assistant\n- Charge an invoice at most once. If a charge fails or times \
    out, call get_payment_status before any retry: the charge may have gone through.";

/// A payment whose first charge times out with its outcome unknown, then `then`, then the
/// assistant's closing line.
fn charge_run(first_result: &str, then: Vec<Value>) -> Trajectory {
    load(messages(vec![
        vec![system(POLICY_PAY), user("Please pay invoice INV-871 with my saved Visa ending 4417.")],
        call(
            "c1",
            "charge_saved_card",
            json!({"invoice_id": "INV-871", "payment_method_id": "pm_4417", "amount": "1240.00", "idempotency_key": "inv-871-7f3a"}),
            first_result,
        ),
        then,
        vec![assistant("Invoice INV-871 is paid: $1,240.00 was charged to your Visa ending 4417.")],
    ]))
}

const TIMED_OUT: &str = "GatewayTimeout: payment gateway did not answer within 30s (request_id=req_Nw3k). The charge may \
    still have been processed; call get_payment_status before retrying.";
const CHARGED: &str = r#"{"status": "succeeded", "charge_id": "ch_3QHb0d", "amount": "1240.00"}"#;

#[test]
fn a_state_change_tried_again_unchecked_after_its_outcome_was_left_unknown_is_found_at_the_retry() {
    // The charge timed out and "may still have been processed"; the agent charges again at once
    // with a new idempotency key. The retry is the error (the invoice may be paid twice), not the
    // time-out, and it is no recovery of it.
    let retry = |key: &str| {
        call(
            "c2",
            "charge_saved_card",
            json!({"invoice_id": "INV-871", "payment_method_id": "pm_4417", "amount": "1240.00", "idempotency_key": key}),
            CHARGED,
        )
    };
    let t = charge_run(TIMED_OUT, retry("inv-871-c921"));
    assert_eq!(t.steps[4].tool_name.as_deref(), Some("charge_saved_card"));
    assert_eq!(findings(&t), vec![(4, Signal::IgnoredToolError)]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredToolError),
        "calls charge_saved_card again after the call at step 2 left its outcome unknown (\"The charge may still have \
         been processed\"), unchecked: the change may now be made twice"
    );
    assert_eq!(falat(&t).decisive_step, Some(4));
    // A connection that dropped leaves the outcome unknown too, whatever the error's wording.
    let t = charge_run("Error: connection reset by peer while waiting for the gateway", retry("inv-871-c921"));
    assert_eq!(findings(&t), vec![(4, Signal::IgnoredToolError)]);

    // The same idempotency key: the gateway drops a request it has already applied, so the
    // retry is safe.
    let t = charge_run(TIMED_OUT, retry("inv-871-7f3a"));
    assert_eq!(findings(&t), vec![]);
    // The status looked up first (not yet charged), then the retry: checked.
    let t = charge_run(
        TIMED_OUT,
        messages(vec![
            call(
                "c2",
                "get_payment_status",
                json!({"invoice_id": "INV-871"}),
                r#"{"invoice_id": "INV-871", "invoice_status": "open", "charges": []}"#,
            ),
            retry("inv-871-c921"),
        ]),
    );
    assert_eq!(findings(&t), vec![]);
    // A card declined is a plain rejection: nothing was charged, and trying again is the
    // recovery of it.
    let t = charge_run("Error: card_declined: insufficient funds", retry("inv-871-c921"));
    assert_eq!(findings(&t), vec![]);
    // The user asked to try again after being told of the time-out: the person decided.
    let t = charge_run(
        TIMED_OUT,
        messages(vec![
            vec![
                assistant("The payment gateway timed out; the charge may have gone through. Shall I try again?"),
                user("Yes, try again."),
            ],
            retry("inv-871-c921"),
        ]),
    );
    assert!(!findings(&t).contains(&(6, Signal::IgnoredToolError)), "{:?}", findings(&t));
    // Another invoice charged after the time-out is no retry of it.
    let t = charge_run(
        TIMED_OUT,
        call(
            "c2",
            "charge_saved_card",
            json!({"invoice_id": "INV-872", "payment_method_id": "pm_4417", "amount": "80.00", "idempotency_key": "inv-872-1"}),
            CHARGED,
        ),
    );
    assert!(!findings(&t).contains(&(4, Signal::IgnoredToolError)), "{:?}", findings(&t));
    // A look-up that does not name the invoice checks nothing about the charge.
    let t = charge_run(
        TIMED_OUT,
        messages(vec![
            call("c2", "get_customer_profile", json!({"customer_id": "acct_31877"}), r#"{"name": "Tallpine"}"#),
            retry("inv-871-c921"),
        ]),
    );
    assert_eq!(findings(&t), vec![(6, Signal::IgnoredToolError)]);
    // A time-out that says nothing was made: the retry is safe.
    let t = charge_run(
        "Error 504: gateway timed out before the request was sent; no charge was made. Safe to retry.",
        retry("inv-871-c921"),
    );
    assert_eq!(findings(&t), vec![]);
}

/// A tool named for what it creates is a state change like any other: its blind retry is found.
#[test]
fn an_order_created_again_after_a_gateway_time_out_is_a_blind_retry() {
    let order = |id: &str, result: &str| {
        call(id, "create_order", json!({"sku": "CB-250", "quantity": 2, "client_ref": "r1"}), result)
    };
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Order 2 bags of CB-250, please.")],
        order("c1", "Error 504: Gateway Time-out. The order may have been created."),
        order("c2", r#"{"order_id": "ORD-9", "status": "placed"}"#),
        vec![assistant("Order ORD-9 is placed.")],
    ]));
    assert_eq!(findings(&t), vec![(4, Signal::IgnoredToolError)]);
    // Its status looked up by the client reference first: checked.
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Order 2 bags of CB-250, please.")],
        order("c1", "Error 504: Gateway Time-out. The order may have been created."),
        call("c2", "list_orders", json!({"client_ref": "r1"}), r#"{"orders": []}"#),
        order("c3", r#"{"order_id": "ORD-9", "status": "placed"}"#),
        vec![assistant("Order ORD-9 is placed.")],
    ]));
    assert_eq!(findings(&t), vec![]);
}

/// A lookup that timed out and is asked again changes nothing: no retry of a change.
#[test]
fn a_lookup_asked_again_after_a_time_out_is_no_blind_retry() {
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Where is order #W100?")],
        call(
            "c1",
            "get_order_details",
            json!({"order_id": "#W100"}),
            "Error: request timed out after 30s; the status is unknown",
        ),
        call(
            "c2",
            "get_order_details",
            json!({"order_id": "#W100"}),
            r##"{"order_id": "#W100", "status": "shipped"}"##,
        ),
        vec![assistant("Order #W100 has shipped.")],
    ]));
    assert_eq!(findings(&t), vec![]);
}

const CATALOGUE: &str = r#"{"name": "T-Shirt", "product_id": "9523456873", "variants": {
    "9612497925": {"item_id": "9612497925", "options": {"color": "blue", "size": "M"}, "available": true, "price": 50.88},
    "5047954489": {"item_id": "5047954489", "options": {"color": "red", "size": "L"}, "available": false, "price": 54.84},
    "8124970213": {"item_id": "8124970213", "options": {"color": "purple", "size": "XL"}, "available": true, "price": 49.67}}}"#;

#[test]
fn an_item_offered_although_its_record_says_unavailable_is_found() {
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Is there a red T-shirt in size L?")],
        call("c1", "get_product_details", json!({"product_id": "9523456873"}), CATALOGUE),
        vec![assistant("Yes! The red T-shirt in size L (item 5047954489) is available for $54.84. Shall I order it?")],
        vec![user("Great, thanks.")],
        // A line saying that an item is unavailable is no offer.
        vec![assistant("Note: item 5047954489 is not available right now; item 9612497925 is.")],
    ]));
    assert_eq!(findings(&t), vec![(4, Signal::UnavailableValue)]);
    assert_eq!(
        evidence(&t, 4, Signal::UnavailableValue),
        "uses 5047954489, whose record at step 3 says \"available\": false"
    );
}

fn count_run(reply: &str) -> Trajectory {
    load(messages(vec![
        vec![system(POLICY_PLAIN), user("How many orders do I have? My user id is jo_doe_1234.")],
        call(
            "c1",
            "get_user_details",
            json!({"user_id": "jo_doe_1234"}),
            r##"{"name": {"first_name": "Jo", "last_name": "Doe"}, "orders": ["#W1", "#W2", "#W3", "#W4"]}"##,
        ),
        vec![assistant(reply)],
    ]))
}

#[test]
fn a_count_that_disagrees_with_its_list_is_found_and_one_that_agrees_is_not() {
    let t = count_run("You have 3 orders on your account.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(evidence(&t, 4, Signal::CountMismatch), "says \"3 orders\"; the list it counts at step 3 has 4");
    // Its number has a source, the list it miscounts: it is not also a value with no source,
    // although no earlier step writes it (12 orders told as 13).
    let ids: Vec<String> = ('A'..='L').map(|c| format!("#W{c}")).collect();
    let twelve = load(messages(vec![
        vec![system(POLICY_PLAIN), user("How many orders do I have? My user id is jo_doe_1234.")],
        call("c1", "get_user_details", json!({"user_id": "jo_doe_1234"}), &json!({"orders": ids}).to_string()),
        vec![assistant("You have 13 orders on your account.")],
    ]));
    let all = crate::chat::findings(&twelve);
    assert!(all.contains(&(4, Signal::CountMismatch)) && !all.contains(&(4, Signal::UnsourcedValue)), "{all:?}");
    assert_eq!(findings(&count_run("You have four orders on your account.")), vec![]);
    // A count of a selection the list cannot check ("pending" is nowhere in it) is left alone.
    assert_eq!(findings(&count_run("You have 2 pending orders.")), vec![]);
}

/// A run whose order lookup returns one page of `page` orders, with `more` saying more remain,
/// then (when `second` is given) the next page, then `reply`.
fn paged_count_run(more: Value, second: Option<&str>, reply: &str) -> Trajectory {
    let page = json!({"orders": ["#W1", "#W2", "#W3", "#W4"], "pagination": more});
    let mut turns = vec![
        vec![system(POLICY_PLAIN), user("How many orders do I have? My user id is jo_doe_1234.")],
        call("c1", "list_orders", json!({"user_id": "jo_doe_1234"}), &page.to_string()),
    ];
    if let Some(next) = second {
        turns.push(call("c2", "list_orders", json!({"user_id": "jo_doe_1234", "cursor": "o_4"}), next));
    }
    turns.push(vec![assistant(reply)]);
    load(messages(turns))
}

#[test]
fn a_count_of_one_page_told_as_the_whole_list_is_a_miscount() {
    let t = paged_count_run(json!({"next_cursor": "o_4"}), None, "You have 4 orders on your account.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(
        evidence(&t, 4, Signal::CountMismatch),
        "says \"4 orders\"; the list it counts at step 3 is one page of a longer result \
         (pagination.next_cursor: \"o_4\"), and no further page was fetched"
    );
    // Told as a part, it claims nothing about the whole list.
    for reply in ["The first page lists 4 orders; there are more.", "You have at least 4 orders."] {
        assert_eq!(findings(&paged_count_run(json!({"next_cursor": "o_4"}), None, reply)), vec![], "{reply}");
    }
    // No next page (an empty cursor, `has_more: false`): the list is whole.
    for done in [json!({"next_cursor": ""}), json!({"has_more": false}), json!({"page": 2, "total_pages": 2})] {
        let t = paged_count_run(done.clone(), None, "You have 4 orders on your account.");
        assert_eq!(findings(&t), vec![], "{done}");
    }
    // A total beside the page that is larger says the same, and the finding gives it; the same
    // page fetched again is one page, not two.
    let run = |page: &str, again: bool, reply: &str| {
        let mut turns = vec![
            vec![system(POLICY_PLAIN), user("How many orders do I have? My user id is jo_doe_1234.")],
            call("c1", "list_orders", json!({"user_id": "jo_doe_1234"}), page),
        ];
        if again {
            turns.push(call("c2", "list_orders", json!({"user_id": "jo_doe_1234"}), page));
        }
        turns.push(vec![assistant(reply)]);
        load(messages(turns))
    };
    let page = r##"{"orders": ["#W1", "#W2", "#W3", "#W4"], "total": 9, "has_more": true}"##;
    let t = run(page, false, "You have 4 orders on your account.");
    assert_eq!(
        evidence(&t, 4, Signal::CountMismatch),
        "says \"4 orders\"; the list it counts at step 3 is one page of a longer result (has_more: true; total 9), \
         and no further page was fetched"
    );
    assert_eq!(findings(&run(page, false, "You have 9 orders on your account.")), vec![]);
    let t = run(page, true, "You have 4 orders on your account.");
    assert_eq!(findings(&t), vec![(6, Signal::CountMismatch)]);
    // The next page fetched: the two pages' entries add up to the count.
    let next = r##"{"orders": ["#W5", "#W6"], "pagination": {"next_cursor": null}}"##;
    let t = paged_count_run(json!({"next_cursor": "o_4"}), Some(next), "You have 6 orders on your account.");
    assert_eq!(findings(&t), vec![]);
    let t = paged_count_run(json!({"next_cursor": "o_4"}), Some(next), "You have 7 orders on your account.");
    assert_eq!(findings(&t), vec![(6, Signal::CountMismatch)]);
}

#[test]
fn a_page_told_as_one_in_words_is_a_page() {
    // The tool says it in a note beside the list, or in a line after its JSON.
    let run = |output: &str, reply: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("How many orders do I have? My user id is jo_doe_1234.")],
            call("c1", "list_orders", json!({"user_id": "jo_doe_1234"}), output),
            vec![assistant(reply)],
        ]))
    };
    let noted = r##"{"orders": ["#W1", "#W2", "#W3", "#W4"], "note": "Showing 4 of 9 orders. Use page=2 for more."}"##;
    let t = run(noted, "You have 4 orders on your account.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(
        evidence(&t, 4, Signal::CountMismatch),
        "says \"4 orders\"; the list it counts at step 3 is one page of a longer result \
         (note: \"Showing 4 of 9\"), and no further page was fetched"
    );
    let after = "[{\"id\": \"#W1\"}, {\"id\": \"#W2\"}, {\"id\": \"#W3\"}, {\"id\": \"#W4\"}]\n\
        Results 1-4 of 9. More results are available.";
    let t = run(after, "You have 4 orders on your account.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(
        evidence(&t, 4, Signal::CountMismatch),
        "says \"4 orders\"; the list it counts at step 3 is one page of a longer result (Results 1-4 of 9), and no \
         further page was fetched"
    );
    // The whole list said so in words: no finding.
    let whole = r##"{"orders": ["#W1", "#W2", "#W3", "#W4"], "note": "Showing 4 of 4 orders."}"##;
    assert_eq!(findings(&run(whole, "You have 4 orders on your account.")), vec![]);
    let whole_after =
        "[{\"id\": \"#W1\"}, {\"id\": \"#W2\"}, {\"id\": \"#W3\"}, {\"id\": \"#W4\"}]\nAll orders listed.";
    assert_eq!(findings(&run(whole_after, "You have 4 orders on your account.")), vec![]);
    // A log after the data that reaches the last page; a note beside two lists; a record's text
    // that is no paging ("returned 1 of 3 items").
    let logged = "[{\"id\": \"#W1\"}, {\"id\": \"#W2\"}, {\"id\": \"#W3\"}, {\"id\": \"#W4\"}]\nfetched page 1 of 2\nfetched page 2 of 2\ndone";
    assert_eq!(findings(&run(logged, "You have 4 orders on your account.")), vec![]);
    let two = r##"{"orders": ["#W1", "#W2", "#W3", "#W4", "#W5"], "payment_methods": ["visa", "paypal"], "note": "Showing 5 of 9 orders"}"##;
    assert_eq!(findings(&run(two, "You have 2 payment methods saved.")), vec![]);
    let returned = r##"{"orders": [{"id": "#W1", "items": 3, "return_note": "Customer returned 1 of 3 items"}, {"id": "#W2", "items": 1, "return_note": ""}]}"##;
    assert_eq!(findings(&run(returned, "You have 2 orders on your account.")), vec![]);
}

#[test]
fn pages_add_up_however_many_and_a_count_finds_its_list_among_many_others() {
    // 70 pages of 2 tickets, each but the last saying more remain: 140 is their sum.
    let mut turns = vec![vec![system(POLICY_PLAIN), user("How many open tickets are there?")]];
    for p in 0..70 {
        let more = if p < 69 { json!(format!("c_{}", p + 1)) } else { Value::Null };
        let page = json!({"tickets": [{"id": format!("T-{p}-a")}, {"id": format!("T-{p}-b")}], "next_cursor": more});
        turns.push(call(
            &format!("c{p}"),
            "list_tickets",
            json!({"status": "open", "cursor": format!("c_{p}")}),
            &page.to_string(),
        ));
    }
    turns.push(vec![assistant("There are 140 open tickets.")]);
    assert_eq!(findings(&load(messages(turns.clone()))), vec![]);
    turns.pop();
    turns.push(vec![assistant("There are 138 open tickets.")]);
    assert_eq!(findings(&load(messages(turns))), vec![(142, Signal::CountMismatch)]);
    // One lookup of open tickets, then 300 of closed ones: "9 open tickets" is still checked
    // against the open ones (7).
    let mut turns = vec![
        vec![system(POLICY_PLAIN), user("How many open tickets are there, and what was closed each day?")],
        call(
            "o",
            "list_tickets",
            json!({"status": "open"}),
            &json!({"tickets": (0..7).map(|k| format!("T-{k}")).collect::<Vec<_>>()}).to_string(),
        ),
    ];
    for d in 0..300 {
        let closed = json!({"tickets": [format!("C-{d}-1"), format!("C-{d}-2")]});
        turns.push(call(&format!("d{d}"), "list_tickets", json!({"status": "closed", "day": d}), &closed.to_string()));
    }
    turns.push(vec![assistant("There are 9 open tickets.")]);
    let t = load(messages(turns));
    assert_eq!(findings(&t), vec![(604, Signal::CountMismatch)]);
    assert_eq!(evidence(&t, 604, Signal::CountMismatch), "says \"9 open tickets\"; the list it counts at step 3 has 7");
}

#[test]
fn a_list_under_a_generic_key_is_named_by_the_tool_that_returned_it() {
    // `{"results": [...]}` from `list_orders`: "orders" names it through the tool.
    let run = |reply: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("How many orders do I have? My user id is jo_doe_1234.")],
            call(
                "c1",
                "list_orders",
                json!({"user_id": "jo_doe_1234"}),
                r##"{"results": [{"id": "#W1"}, {"id": "#W2"}, {"id": "#W3"}, {"id": "#W4"}], "has_more": false}"##,
            ),
            vec![assistant(reply)],
        ]))
    };
    assert_eq!(findings(&run("You have 4 orders on your account.")), vec![]);
    let t = run("You have 3 orders on your account.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(evidence(&t, 4, Signal::CountMismatch), "says \"3 orders\"; the list it counts at step 3 has 4");
}

#[test]
fn a_listing_s_first_page_told_as_every_open_ticket_is_the_decisive_step() {
    // 25 tickets with `has_more: true` told as "There are 25 open P1 tickets"; the twin fetches
    // the second page of 8 and tells 33, which the two pages add up to (no unsourced value).
    crate::chat::no_failure("handbuilt/openai-chat/p1_tickets_all_pages_ok.openai-chat.json");
    let t = crate::chat::fixture("handbuilt/openai-chat/p1_tickets_first_page_told_as_all.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::CountMismatch), vec![4]);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new());
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(4), Some("assistant")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "misread_tool_output");
}

#[test]
fn a_compound_of_the_call_s_filter_names_its_list() {
    // "high-priority" is the call's `"priority": "high"`: the count names the page it counts.
    let page = json!({"tickets": [{"id": "PLAT-1"}, {"id": "PLAT-2"}, {"id": "PLAT-3"}], "has_more": true,
        "next_cursor": "c_3"});
    let run = |reply: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("How many open high-priority tickets does Platform have?")],
            call(
                "c1",
                "list_tickets",
                json!({"team": "platform", "status": "open", "priority": "high"}),
                &page.to_string(),
            ),
            vec![assistant(reply)],
        ]))
    };
    let t = run("Platform has 3 open high-priority tickets.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(
        evidence(&t, 4, Signal::CountMismatch),
        "says \"3 open high-priority tickets\"; the list it counts at step 3 is one page of a longer result \
         (has_more: true), and no further page was fetched"
    );
    // A compound one of whose parts the call did not ask for selects what the list does not mark.
    assert_eq!(findings(&run("Platform has 3 open low-priority tickets.")), vec![]);
    assert_eq!(findings(&run("Platform has 2 open customer-facing tickets.")), vec![]);
    // An argument that negates, bounds or excludes selects nothing by its name or value.
    let list = json!({"tickets": [{"id": "T-1"}, {"id": "T-2"}, {"id": "T-3"}, {"id": "T-4"}]});
    for (args, reply) in [
        (json!({"status": "open", "escalated": "false"}), "2 escalated tickets need a reply."),
        (json!({"max_priority": "medium"}), "There are 3 medium-priority tickets."),
        (json!({"exclude_status": "closed"}), "6 closed tickets were resolved this week."),
    ] {
        let t = load(messages(vec![
            vec![system(POLICY_PLAIN), user("What's in the queue?")],
            call("c1", "list_tickets", args.clone(), &list.to_string()),
            vec![assistant(reply)],
        ]));
        assert_eq!(steps_with(&t, Signal::CountMismatch), Vec::<usize>::new(), "{args} {reply}");
    }
    // A compound's short joining word aside: "at-risk" is the call's `"churn_risk": "high"`.
    let accounts = json!({"accounts": [{"id": "A1"}, {"id": "A2"}], "has_more": true});
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("How many high-value accounts are at risk?")],
        call("c1", "search_accounts", json!({"value": "high", "churn_risk": "high"}), &accounts.to_string()),
        vec![assistant("There are 2 high-value at-risk accounts.")],
    ]));
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
}

#[test]
fn a_count_of_available_entries_is_checked_against_the_available_subset() {
    let run = |reply: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("How many T-shirt options are available?")],
            call("c1", "get_product_details", json!({"product_id": "9523456873"}), CATALOGUE),
            vec![assistant(reply)],
        ]))
    };
    // Three variants, two available: 2 and 3 agree, 4 does not.
    assert_eq!(findings(&run("There are 2 available T-shirt options.")), vec![]);
    assert_eq!(findings(&run("There are 3 T-shirt options.")), vec![]);
    let t = run("There are 4 available T-shirt options.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(
        evidence(&t, 4, Signal::CountMismatch),
        "says \"4 available T-shirt options\"; the list it counts at step 3 has 3 (2 with available=true)"
    );
}

#[test]
fn a_rejected_change_told_as_made_at_once_is_the_misreading_not_the_call() {
    let run = |args: Value, result: &str, reply: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Book me the Messe Riem room for 18-20 March on my corporate card.")],
            call(
                "c1",
                "search_hotels",
                json!({"near": "Messe Riem"}),
                r#"{"results": [{"quote_id": "q_8f21c", "rate_eur": 189.0}]}"#,
            ),
            call("c2", "book_hotel", args, result),
            vec![assistant(reply)],
        ]))
    };
    let booking = json!({"quote_id": "q_8f21c", "nights": 2});
    // The quote expired: the tool's answer; the reply that tells the room booked misreads it.
    let t = run(booking.clone(), "Error: RATE_EXPIRED", "Your hotel is booked: Messe Riem, 18-20 March.");
    assert_eq!(findings(&t), vec![(6, Signal::IgnoredResult)]);
    assert_eq!(
        evidence(&t, 6, Signal::IgnoredResult),
        "tells the change as made (\"Your hotel is booked: Messe Riem, 18-20 March.\") although the tool rejected it at \
         step 5: Error: RATE_EXPIRED"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("assistant")), "{}", d.reason);
    // Told as it is: the rejection stays the call's, nothing is misread.
    let t = run(booking, "Error: RATE_EXPIRED", "The booking failed: the quote expired. Shall I search again?");
    assert_eq!(findings(&t), vec![(4, Signal::RejectedAction)]);
    // Replies that tell no such thing: a plan, another sense of "booked", an error named, a change
    // the error says holds already.
    for (result, reply) in [
        ("Error: RATE_EXPIRED", "Let me check whether the hotel is booked under another quote."),
        ("Error: NO_AVAILABILITY", "The Messe Riem hotel is booked solid those nights; shall I look nearby?"),
        ("Error: RATE_EXPIRED", "Sorry, I can't book it now: the hotel quote is confirmed only for 10 minutes."),
        ("Error: booking q_8f21c already confirmed", "Your hotel is booked: Messe Riem, 18-20 March."),
    ] {
        let t = run(json!({"quote_id": "q_8f21c", "nights": 2}), result, reply);
        assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new(), "{result} {reply}");
    }
    // A reply that tells another change, made earlier, is no telling of this one.
    let flight_then_hotel = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Book flight LH2034 and the Messe Riem hotel.")],
        call("c0", "book_flight", json!({"flight": "LH2034"}), r#"{"status": "confirmed", "pnr": "XK7Q2P"}"#),
        call("c2", "book_hotel", json!({"quote_id": "q_8f21c", "nights": 2}), "Error: RATE_EXPIRED"),
        vec![assistant("Your flight LH2034 is booked (PNR XK7Q2P).")],
    ]));
    assert_eq!(steps_with(&flight_then_hotel, Signal::IgnoredResult), Vec::<usize>::new());
    // A rate of the call's own making (189.0 read, 1890.0 paid): the call was wrong itself.
    let wrong = json!({"quote_id": "q_8f21c", "nights": 2, "rate_eur": 1890.0});
    let t = run(wrong, "Error: rate 1890.0 does not match quote (189.0)", "Your hotel is booked: Messe Riem.");
    assert_eq!(findings(&t)[0], (4, Signal::RejectedAction));
    assert_eq!(falat(&t).decisive_step, Some(4));
}

#[test]
fn a_rejected_change_made_another_way_right_after_is_not_a_finding() {
    let run = |then: Vec<Value>| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Swap the speaker in order #W300 for the green one.")],
            call(
                "c1",
                "exchange_delivered_order_items",
                json!({"order_id": "#W300", "item_ids": ["111111"], "new_item_ids": ["222222"]}),
                "Error: non-delivered order cannot be exchanged",
            ),
            then,
            vec![assistant("Done: the speaker in your order is now the green one.")],
        ]))
    };
    // The same order is then modified with success: the exchange's refusal is context.
    let t = run(call(
        "c2",
        "modify_pending_order_items",
        json!({"order_id": "#W300", "item_ids": ["111111"], "new_item_ids": ["222222"]}),
        r##"{"order_id": "#W300", "status": "pending (item modified)"}"##,
    ));
    assert_eq!(findings(&t), vec![]);
    // Another order is modified instead: the refusal stands.
    let t = run(call(
        "c2",
        "modify_pending_order_items",
        json!({"order_id": "#W301", "item_ids": ["111111"], "new_item_ids": ["222222"]}),
        r##"{"order_id": "#W301", "status": "pending (item modified)"}"##,
    ));
    assert_eq!(findings(&t), vec![(2, Signal::RejectedAction), (4, Signal::IgnoredToolError)]);
}

#[test]
fn a_rejected_change_retried_at_once_with_the_value_the_error_asked_for_is_not_a_finding() {
    // A booking names no object (no id argument): the retry of the same tool is what recovers it.
    let run = |retry: Vec<Value>| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Book a ride for the 4 of us from the restaurant to the hotel at 22:30.")],
            call(
                "c1",
                "schedule_ride",
                json!({"pickup": "228 W 52nd St", "dropoff": "1535 Broadway", "passengers": 4, "vehicle": "standard"}),
                "Error: vehicle class 'standard' seats max 3 passengers; use 'xl'",
            ),
            retry,
            vec![assistant("Your ride is booked for 22:30.")],
        ]))
    };
    // Booked at once with the class the error named: the refusal is context.
    let t = run(call(
        "c2",
        "schedule_ride",
        json!({"pickup": "228 W 52nd St", "dropoff": "1535 Broadway", "passengers": 4, "vehicle": "xl"}),
        r#"{"ride_id": "RIDE-55K1V", "status": "scheduled"}"#,
    ));
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    // The retry is refused too: the booking was never made, and the closing message says it was.
    let t = run(call(
        "c2",
        "schedule_ride",
        json!({"pickup": "228 W 52nd St", "dropoff": "1535 Broadway", "passengers": 4, "vehicle": "xl"}),
        "Error: no xl vehicle available at 22:30",
    ));
    assert_eq!(findings(&t)[0], (2, Signal::RejectedAction));
}

const FORECAST: &str =
    r#"{"city": "Porto, PT", "date": "2025-07-13", "rain_mm": 14.2, "summary": "heavy showers from 11:00"}"#;

/// A lookup and the answer told to the user after it: steps 0 (user), 1 (call), 2 (result), 3.
fn forecast_run(answer: &str) -> Trajectory {
    load(messages(vec![
        vec![user("I land in Porto tomorrow (2025-07-13). Do I need an umbrella?")],
        call("c1", "get_forecast", json!({"city": "Porto, PT", "date": "2025-07-13"}), FORECAST),
        vec![assistant(answer)],
    ]))
}

#[test]
fn an_answer_that_uses_nothing_its_lookup_returned_is_found_and_one_that_reads_it_is_not() {
    let t = forecast_run("No umbrella needed: Porto will be dry and sunny tomorrow.");
    assert_eq!(findings(&t), vec![(3, Signal::IgnoredResult)]);
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "tells the user \"No umbrella needed: Porto will be dry and sunny tomorrow.\" right after the tool result \
         at step 2 and uses none of the values it returned (14.2, \"heavy showers from 11:00\")"
    );
    // An answer that takes up the result's words or numbers (rounded as it writes them) read it;
    // a question asks, it tells nothing.
    for reads in [
        "Yes: a heavy shower is expected from late morning.",
        "Yes, take one: about 14 mm of rain is forecast.",
        "Take it: rain from 11:00.",
        "Is the afternoon when you land?",
    ] {
        assert_eq!(findings(&forecast_run(reads)), vec![], "{reads}");
    }
}

#[test]
fn an_answer_from_an_earlier_lookup_of_the_turn_a_quoted_id_or_a_confirmation_is_no_ignored_result() {
    // The answer comes from the first of two lookups of the turn.
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Which of my orders has the bookshelf?")],
        call(
            "c1",
            "get_order_details",
            json!({"order_id": "#W1"}),
            r##"{"order_id": "#W1", "items": [{"name": "Bookshelf", "item_id": "111111"}], "status": "delivered"}"##,
        ),
        call(
            "c2",
            "get_order_details",
            json!({"order_id": "#W2"}),
            r##"{"order_id": "#W2", "items": [{"name": "Luggage Set", "item_id": "222222"}], "status": "pending"}"##,
        ),
        vec![assistant("The bookshelf is in your first order, which was delivered.")],
    ]));
    assert_eq!(findings(&t), vec![]);
    // It quotes the identifiers the lookup returned.
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Which orders do I have? I am jo_doe_1234.")],
        call(
            "c1",
            "get_user_details",
            json!({"user_id": "jo_doe_1234"}),
            r##"{"name": "Jo Doe", "orders": ["#W6239298", "#W8660475"], "city": "Chicago"}"##,
        ),
        vec![assistant("Thanks, Jo! Your orders are #W6239298 and #W8660475.")],
    ]));
    assert_eq!(findings(&t), vec![]);
    // A confirmation after a state change need not repeat what the tool returned.
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Cancel order #W2, I ordered it by mistake.")],
        call(
            "c1",
            "cancel_pending_order",
            json!({"order_id": "#W2", "reason": "ordered by mistake"}),
            r##"{"order_id": "#W2", "refund": {"amount": 514.72, "method": "gift card"}}"##,
        ),
        vec![assistant("All done for you, anything else?.")],
    ]));
    assert_eq!(findings(&t), vec![]);
}

#[test]
fn a_hedging_word_the_lookup_wrote_is_no_assumption() {
    let run = |result: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Where is my order #A1043?")],
            call("c1", "get_order_status", json!({"order_id": "#A1043"}), result),
            vec![assistant("Order #A1043 is delayed; the estimated delivery is 2025-03-14.")],
        ]))
    };
    let assumptions = |t: &Trajectory| steps_with(t, Signal::Assumption);
    // "estimated" is the tool's field (`estimated_delivery`): the answer repeats it.
    let t = run(r##"{"order_id": "#A1043", "status": "delayed", "estimated_delivery": "2025-03-14"}"##);
    assert_eq!(assumptions(&t), Vec::<usize>::new());
    assert!(!Substrate::build(&t).hierarchy.steps[4].flags.hedged);
    // The same answer after a lookup that estimates nothing: the estimate is the agent's own.
    let t = run(r##"{"order_id": "#A1043", "status": "delayed", "delivery": "2025-03-14"}"##);
    assert_eq!(assumptions(&t), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::Assumption),
        "rests on an assumption: Order #A1043 is delayed; the estimated delivery is 2025-03-14."
    );
}

#[test]
fn a_booking_the_tool_refuses_is_the_decisive_step_of_a_run_that_ends_there() {
    // OpenAI Agents SDK span list: a fare check, then a booking answered with the SDK's default
    // tool error ("An error occurred while running the tool …"), then a guardrail trips.
    let t = crate::chat::fixture("frameworks/openai-agents-responses-span-list.jsonl");
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(4), "{}", d.reason);
    assert_eq!(
        crate::chat::evidence(&t, 4, Signal::RejectedAction),
        "book_seat changes state and the tool rejects it at step 5: An error occurred while running the tool. Please \
         try again. Error: no seats on 2025-10-30"
    );
    // Sufficiency passes on the change the run failed to make, not on a dependency path.
    let c = d.candidates.iter().find(|c| c.step == 4).expect("step 4 is a candidate");
    let s = &c.verification.as_ref().expect("checked").sufficiency;
    assert!(s.passed && s.evidence.to_string().contains("the change it failed to make"), "{s:?}");
    // The fare check only reads.
    assert!(!signals::changes_state(&t, 1));
}

#[test]
fn an_answer_that_tells_another_status_than_its_lookup_is_found_even_when_it_reuses_other_values() {
    const STATUS: &str =
        r##"{"order_id": "#A1043", "status": "delayed", "estimated_delivery": "2025-03-14", "items": 2}"##;
    let run = |answer: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Is my order #A1043 still arriving on March 6?")],
            call("c1", "get_order_status", json!({"order_id": "#A1043"}), STATUS),
            vec![assistant(answer)],
        ]))
    };
    // The order number and the two items are the result's; the status is not.
    let t = run("Good news: order #A1043 with its 2 items is on schedule and will arrive on March 6.");
    assert_eq!(findings(&t), vec![(4, Signal::IgnoredResult)]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredResult),
        "tells the user \"Good news: order #A1043 with its 2 items is on schedule and…\" (\"on schedule\") but the \
         tool result at step 3 says \"status\": \"delayed\""
    );
    for faithful in [
        "Order #A1043 is delayed; the estimated delivery is 2025-03-14.",
        "Sorry, it is running late: it should arrive on 2025-03-14.",
        "Your order is not on schedule: it should now arrive on 2025-03-14.",
    ] {
        assert_eq!(findings(&run(faithful)), vec![], "{faithful}");
    }
    // Two lookups of the turn hold two statuses: telling either is faithful.
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Where are my orders #W1 and #W2?")],
        call("c1", "get_order_details", json!({"order_id": "#W1"}), r##"{"order_id": "#W1", "status": "delivered"}"##),
        call("c2", "get_order_details", json!({"order_id": "#W2"}), r##"{"order_id": "#W2", "status": "pending"}"##),
        vec![assistant("Order #W1 has been delivered and #W2 is still pending.")],
    ]));
    assert_eq!(findings(&t), vec![]);
}

#[test]
fn an_agent_saying_it_retries_a_lookup_that_then_succeeds_is_no_failure() {
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("What do I owe on invoice INV-3302?")],
        call("c1", "get_invoice", json!({"invoice_id": "INV-3302"}), "HTTPError: 504 Gateway Timeout from billing-api"),
        vec![assistant("The billing service timed out; retrying once.")],
        call(
            "c2",
            "get_invoice",
            json!({"invoice_id": "INV-3302"}),
            r#"{"amount_due_eur": 148.2, "due_date": "2025-05-15"}"#,
        ),
        vec![assistant("Invoice INV-3302: you owe 148.20 EUR, due on 15 May 2025.")],
    ]));
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(d.reason.starts_with("No failure found: the tool error at step 3 was recovered from"), "{}", d.reason);
}

#[test]
fn a_count_qualified_as_the_lookup_is_named_is_checked_against_its_list() {
    // "free slots" from a lookup named get_free_slots: the list is of free slots.
    let run = |reply: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Which appointments are free on Tuesday?")],
            call(
                "c1",
                "get_free_slots",
                json!({"date": "2025-06-10"}),
                r#"{"slots": ["09:00", "11:30", "15:00", "16:45"]}"#,
            ),
            vec![assistant(reply)],
        ]))
    };
    let t = run("There are 3 free slots on Tuesday: 09:00, 11:30 and 15:00.");
    assert_eq!(findings(&t), vec![(4, Signal::CountMismatch)]);
    assert_eq!(evidence(&t, 4, Signal::CountMismatch), "says \"3 free slots\"; the list it counts at step 3 has 4");
    assert_eq!(findings(&run("There are 4 free slots on Tuesday: 09:00, 11:30, 15:00 and 16:45.")), vec![]);
    // An adjective the lookup's name does not carry still selects: left alone.
    assert_eq!(findings(&run("There are 3 morning slots on Tuesday.")), vec![]);
}

#[test]
fn a_call_with_a_near_miss_of_the_users_value_is_the_decisive_step() {
    let run = |order: &str| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Please change the address on order 58213 to 14 Rue Oberkampf, Paris.")],
            call(
                "c1",
                "get_order",
                json!({"order_id": order}),
                &format!(r#"{{"order_id": "{order}", "status": "processing"}}"#),
            ),
            vec![assistant(&format!("I found your order {order}; it is still processing."))],
        ]))
    };
    // Two digits swapped.
    let t = run("52813");
    assert_eq!(findings(&t), vec![(2, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 2, Signal::ArgumentMismatch),
        "calls get_order with 52813, but the user wrote 58213 at step 1"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(2), "{}", d.reason);
    assert_eq!(d.category.as_str(), "tool_parameter_or_invocation_error");
    // The user's own number, or one far from it, is no near miss.
    assert_eq!(findings(&run("58213")), vec![]);
    assert_eq!(findings(&run("90417")), vec![]);
    // A date a month off, however the user wrote it.
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("Find me a flight from Amsterdam to Lisbon on 14 July 2025.")],
        call(
            "c1",
            "search_flights",
            json!({"origin": "AMS", "date": "2025-06-14"}),
            r#"{"flights": [{"id": "TP663"}]}"#,
        ),
        vec![assistant("I found flight TP663.")],
    ]));
    assert_eq!(findings(&t), vec![(2, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 2, Signal::ArgumentMismatch),
        "calls search_flights with 2025-06-14, but the user wrote 14 July 2025 at step 1"
    );
}

#[test]
fn a_lookup_retried_after_a_json_error_report_is_recovered() {
    // The tool answers with an error object, not an error line; the agent corrects the argument.
    let t = load(messages(vec![
        vec![system(POLICY_PLAIN), user("What plan am I on? My number is 0176 4432 9018.")],
        call(
            "c1",
            "lookup_customer",
            json!({"phone": "0176 4432 9018"}),
            r#"{"error": "INVALID_ARGUMENT", "message": "phone must be in E.164 format"}"#,
        ),
        call(
            "c2",
            "lookup_customer",
            json!({"phone": "+4917644329018"}),
            r#"{"customer_id": "C-558120", "plan": "SMART_M"}"#,
        ),
        vec![assistant("You are on the Smart M plan.")],
    ]));
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

/// A calendar run without a system policy: the user's request, a lookup, the change, the reply.
fn move_run(request: &str, asked_and_answered: Option<&str>) -> Trajectory {
    let mut parts = vec![
        vec![user(request)],
        call(
            "c1",
            "check_availability",
            json!({"attendees": ["jan", "priya"], "date": "2025-06-12"}),
            r#"{"common_free_slots": {"2025-06-12": ["14:00-15:00"]}}"#,
        ),
    ];
    if let Some(reply) = asked_and_answered {
        parts.push(vec![assistant("Thursday 14:00 is free for both of you. Shall I move the series?")]);
        parts.push(vec![user(reply)]);
    }
    parts.push(call(
        "c2",
        "update_event",
        json!({"event_id": "evt_7hq2", "start": "2025-06-12T14:00:00+02:00", "scope": "this_and_following"}),
        r#"{"ok": true, "updated_instances": 12}"#,
    ));
    parts.push(vec![assistant("Done: your 1:1 is on Thursdays at 14:00 from now on.")]);
    load(messages(parts))
}

#[test]
fn a_change_made_although_the_user_asked_to_be_asked_first_is_unconfirmed() {
    let check_first =
        "Could Priya and I move our Tuesday 1:1 to Thursday afternoon? Check first whether that works for both of us.";
    let t = move_run(check_first, None);
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("update_event"));
    assert_eq!(findings(&t), vec![(3, Signal::UnconfirmedAction)]);
    assert_eq!(
        evidence(&t, 3, Signal::UnconfirmedAction),
        "update_event changes state without the user's confirmation that the user asked for at step 0 \
         (\"Check first whether that works for both of us\"): it never asked the user"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // Other ways to ask to be asked first.
    for request in [
        "Find us a slot on Thursday, but don't change anything yet.",
        "Please ask me before you change the meeting.",
        "Look into moving the 1:1, but do not reschedule it until I confirm.",
        "Find a Thursday slot and show me the new invite before anything goes out.",
        "Draft the change; let me review it first.",
        // The user holding the decision back in other words.
        "Is there a Thursday slot? I'd have to check with my boss first before I commit to anything.",
        "Is Thursday free? Just tell me what's available for now.",
    ] {
        assert_eq!(findings(&move_run(request, None)), vec![(3, Signal::UnconfirmedAction)], "{request}");
    }
    // A rule that holds back one kind of action (paying, booking) leaves the others free.
    assert_eq!(findings(&move_run("Move the 1:1 to Thursday and hold the room, but don't pay yet.", None)), vec![]);
    assert_eq!(
        signals::actions::asks_to_be_asked(
            "Find me a flight to Berlin on Friday, but don't book anything yet. Thanks!"
        ),
        Some(("Find me a flight to Berlin on Friday, but don't book anything yet", Some("book")))
    );
    // Asked, and the user said yes: no finding; a plain request to act sets no such rule.
    assert_eq!(findings(&move_run(check_first, Some("Yes, go ahead."))), vec![]);
    // Under the user's own rule, the user asking for the change is the user's decision.
    assert_eq!(findings(&move_run(check_first, Some("Hm. Please move it to Thursday then."))), vec![]);
    assert_eq!(findings(&move_run("Move our Tuesday 1:1 with Priya to Thursday 14:00.", None)), vec![]);
}

#[test]
fn the_agents_own_instructions_can_ask_for_confirmation() {
    // An OpenAI Agents SDK agent's instructions are no step (its generation's system message): the
    // loader keeps them as the agent's role text.
    let mut t = move_run("Move our Tuesday 1:1 with Priya to Thursday 14:00.", None);
    let agent = t.agents.iter_mut().find(|a| a.name == "assistant").expect("the assistant");
    agent.role = Some(
        "You are the calendar assistant. Only change or cancel events after the user has explicitly confirmed the exact change."
            .into(),
    );
    assert_eq!(findings(&t), vec![(3, Signal::UnconfirmedAction)]);
    assert_eq!(
        evidence(&t, 3, Signal::UnconfirmedAction),
        "update_event changes state without the user's confirmation that assistant's instructions ask for: \
         it never asked the user"
    );
    // The person served named by a pronoun; a rule that opens with one kind of action holds for
    // that kind only.
    let agent = t.agents.iter_mut().find(|a| a.name == "assistant").expect("the assistant");
    agent.role =
        Some("Drafts may be made freely. Moving events requires her explicit approval of the new time.".into());
    assert_eq!(findings(&t), vec![(3, Signal::UnconfirmedAction)]);
    let agent = t.agents.iter_mut().find(|a| a.name == "assistant").expect("the assistant");
    agent.role = Some("Sending email on Priya's behalf requires her explicit approval of the exact text.".into());
    assert_eq!(findings(&t), vec![], "update_event sends no email");
}

#[test]
fn an_agents_sdk_agent_whose_instructions_ask_for_confirmation_moves_a_series_unasked() {
    // A held-out user's OpenAI Agents SDK export: the system message is in the generation span's
    // input (the agent's instructions), the user asks to "check first", the agent moves the
    // recurring meeting and notifies the attendee.
    let t = crate::chat::fixture("handbuilt/openai-agents/agents-sdk_calendar_moved_unasked.json");
    assert_eq!(t.steps[5].tool_name.as_deref(), Some("update_event"));
    // The revert the user asks for at step 8 ("Please put it back to Tuesday") is unconfirmed too:
    // the instructions ask for an explicit confirmation of the exact change, which a request the
    // agent did not read back is not (as a system policy reads); only a rule the user set
    // themselves is lifted by the user's own request.
    assert_eq!(findings(&t), vec![(5, Signal::UnconfirmedAction), (9, Signal::UnconfirmedAction)]);
    assert_eq!(
        evidence(&t, 5, Signal::UnconfirmedAction),
        "update_event changes state without the user's confirmation that Calendar Assistant's instructions ask for: \
         it never asked the user"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(5), Some("Calendar Assistant")), "{}", d.reason);
}

fn release_run(answer: &str) -> Trajectory {
    load(messages(vec![
        vec![user("When was version 2.31.0 of requests released?")],
        call(
            "c1",
            "fetch_page",
            json!({"url": "https://pypi.org/project/requests/#history"}),
            "Release history\n2.32.0 yanked\nMay 20, 2024\n2.31.0\nMay 22, 2023\n2.30.0\nMay 3, 2023\n2.29.0\nApr 26, 2023",
        ),
        vec![assistant(answer)],
    ]))
}

#[test]
fn a_date_read_off_the_neighbouring_entry_is_found_and_the_right_one_is_not() {
    let t = release_run("The release history lists version 2.31.0 with the date May 3, 2023.");
    assert_eq!(findings(&t), vec![(3, Signal::IgnoredResult)]);
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "states May 3, 2023 for 2.31.0, but step 2 lists 2.31.0 with May 22, 2023; May 3, 2023 goes with 2.30.0"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // The date that goes with the version, however it is written: no finding.
    for right in ["Version 2.31.0 was released on May 22, 2023.", "2.31.0: 2023-05-22 (a week after 2.30.0)."] {
        assert_eq!(findings(&release_run(right)), vec![], "{right}");
    }
}

/// A call's yes/no option set against the user's words for it is the decisive call: "let it run
/// until the end of the period" then `cancel_subscription` with `at_period_end: false` (a
/// held-out user's Agents SDK run: the subscription ended at once and PDF export was revoked,
/// while the closing message said access stays until the period's end).
#[test]
fn a_yes_no_option_set_against_the_user_s_words_is_the_decisive_call() {
    let t = crate::chat::fixture("handbuilt/openai-agents/cancel_now_against_period_end.openai-agents.json");
    let found: Vec<usize> =
        crate::chat::findings(&t).into_iter().filter(|(_, s)| *s == Signal::ArgumentMismatch).map(|(i, _)| i).collect();
    assert_eq!(found, vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "calls cancel_subscription with at_period_end false, but the user asked \"But please let it run until \
         the end of the period I've already paid f…\" (step 0)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(4), Some("Billing Assistant")), "{}", d.reason);
    // Built here: a negated request turns the option round; a request the option keeps, a
    // one-word option and an option the user said nothing of are no finding.
    let run = |said: &str, args: Value| {
        let mut m = vec![user(said)];
        m.extend(call("c1", "cancel_subscription", args, r#"{"status": "ok"}"#));
        m.push(assistant("Done."));
        crate::chat::load(m)
    };
    let mismatches = |t: &Trajectory| {
        crate::chat::findings(t)
            .into_iter()
            .filter(|(_, s)| *s == Signal::ArgumentMismatch)
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    };
    let t = run(
        "Cancel sub_9 please. Don't notify the customer, I'll call them.",
        json!({"id": "sub_9", "notify_customer": true}),
    );
    assert_eq!(mismatches(&t), vec![1]);
    for (said, args) in [
        ("Cancel sub_9 at the end of the period please.", json!({"id": "sub_9", "at_period_end": true})),
        ("Cancel sub_9 right away, not at the end of the period.", json!({"id": "sub_9", "at_period_end": false})),
        ("Cancel sub_9 and prorate it.", json!({"id": "sub_9", "prorate": false})),
        ("Cancel sub_9 right away.", json!({"id": "sub_9", "notify_customer": false})),
    ] {
        assert_eq!(mismatches(&run(said, args.clone())), Vec::<usize>::new(), "{said} {args}");
    }
}

#[test]
fn a_preview_of_a_change_is_no_state_change_and_the_change_after_it_is_found() {
    // The user asks what a plan change would cost; the assistant previews the invoice (a read:
    // by its name, or by a `preview: true` argument), then changes the plan unasked.
    for (tool, args) in [
        ("preview_invoice", json!({"plan": "business", "seats": 14})),
        ("create_preview", json!({"plan": "business", "seats": 14})),
        ("update_subscription", json!({"plan": "business", "seats": 14, "preview": true})),
        ("cancel_pending_order", json!({"order_id": "#W200", "dry_run": true})),
    ] {
        let t = load(messages(vec![
            vec![system(POLICY_CONFIRM), user("What would Business cost for our 14 seats? Just checking.")],
            call("c1", tool, args, r#"{"preview": true, "monthly_total_usd": 294.0}"#),
            call(
                "c2",
                "change_subscription",
                json!({"plan": "business", "seats": 14}),
                r#"{"ok": true, "plan": "business"}"#,
            ),
            vec![assistant("Business for 14 seats is $294.00 a month; I've switched you over.")],
        ]));
        assert_eq!(t.steps[4].tool_name.as_deref(), Some("change_subscription"));
        assert_eq!(
            findings(&t).into_iter().filter(|(_, s)| *s == Signal::UnconfirmedAction).collect::<Vec<_>>(),
            vec![(4, Signal::UnconfirmedAction)],
            "{tool}"
        );
    }
}

/// A spend query rejected for its office code, a listing of the codes, then the retry with
/// `retry` as its arguments.
fn retried_query(retry: Value, user_between: bool) -> Trajectory {
    let first = json!({"office": "Berlin", "category": "travel", "from": "2025-07-01", "to": "2025-09-30"});
    let mut parts = vec![
        vec![
            system("You answer questions about the company's expenses."),
            user("How much did Berlin spend on travel in Q3?"),
        ],
        call(
            "c1",
            "query_expenses",
            first,
            "Error: unknown office code 'Berlin'; expected one of the codes returned by list_offices",
        ),
        call(
            "c2",
            "list_offices",
            json!({}),
            r#"[{"city": "Berlin", "code": "BER"}, {"city": "Munich", "code": "MUC"}]"#,
        ),
    ];
    if user_between {
        parts.push(vec![user("Actually, make it Q3 of last year.")]);
    }
    parts.push(call("c3", "query_expenses", retry, r#"{"total": 50532.45, "currency": "EUR"}"#));
    load(messages(parts))
}

#[test]
fn a_retry_that_also_changes_what_the_error_did_not_name_is_found() {
    // The error named the office; the retry fixes it and also moves the dates a year back.
    let t =
        retried_query(json!({"office": "BER", "category": "travel", "from": "2024-07-01", "to": "2024-09-30"}), false);
    assert_eq!(t.steps[6].tool_name.as_deref(), Some("query_expenses"));
    let found: Vec<(usize, Signal)> =
        findings(&t).into_iter().filter(|(_, s)| *s == Signal::ArgumentMismatch).collect();
    assert_eq!(found, vec![(6, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 6, Signal::ArgumentMismatch),
        "retries query_expenses after the error at step 3 named office, but also changes from 2025-07-01 → 2024-07-01, \
         to 2025-09-30 → 2024-09-30, none of which the error named"
    );
    // Only the named argument fixed; the dates rewritten in another form; a value the listing
    // between wrote; the user asking for the change between: no finding.
    for (retry, user_between) in [
        (json!({"office": "BER", "category": "travel", "from": "2025-07-01", "to": "2025-09-30"}), false),
        (json!({"office": "BER", "category": "travel", "from": "01.07.2025", "to": "30/09/2025"}), false),
        (json!({"office": "BER", "category": "MUC", "from": "2025-07-01", "to": "2025-09-30"}), false),
        (json!({"office": "BER", "category": "travel", "from": "2024-07-01", "to": "2024-09-30"}), true),
    ] {
        let t = retried_query(retry.clone(), user_between);
        assert!(!findings(&t).iter().any(|(_, s)| *s == Signal::ArgumentMismatch), "{retry} {user_between}");
    }
}

#[test]
fn a_refund_of_the_line_the_agent_did_not_describe_is_a_wrong_argument() {
    let order = r#"{"order_id": "5581-2207", "status": "delivered", "lines": [
        {"line_id": "L1", "sku": "KT17-WHT", "name": "Ardent kettle 1.7 L, white", "paid": 58.41},
        {"line_id": "L2", "sku": "KT17-BLU", "name": "Ardent kettle 1.7 L, blue", "paid": 62.91},
        {"line_id": "L3", "sku": "DSC-4PK", "name": "Citric descaler, 4-pack", "paid": 7.65}]}"#;
    let run = |line: &str, paid: f64| {
        load(messages(vec![
            vec![
                system(POLICY_PLAIN),
                user(
                    "Order 5581-2207: the blue kettle arrived cracked. The white one and the descaler are fine. Refund just the blue kettle.",
                ),
            ],
            call("c1", "get_order", json!({"order_id": "5581-2207"}), order),
            vec![assistant(
                "The order has two kettles; the blue one is the damaged one. Refunding it at the price paid.",
            )],
            call(
                "c2",
                "refund_line",
                json!({"order_id": "5581-2207", "line_id": line, "amount": paid}),
                &format!(
                    r#"{{"refund_id": "RF-90331", "line_id": "{line}", "amount": {paid}, "status": "processed"}}"#
                ),
            ),
            vec![assistant("Done: the blue kettle is refunded.")],
        ]))
    };
    // The blue kettle's line: what the agent said it would refund.
    assert_eq!(findings(&run("L2", 62.91)), vec![]);
    // The white kettle's line, next to it in the list.
    let t = run("L1", 58.41);
    assert_eq!(findings(&t), vec![(5, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 5, Signal::ArgumentMismatch),
        "refund_line acts on line_id L1 (\"Ardent kettle 1.7 L, white\"), but step 4 describes \"blue\", which only \
         line_id L2 (\"Ardent kettle 1.7 L, blue\") of the list at step 3 has"
    );
    assert_eq!(falat(&t).decisive_step, Some(5), "{}", falat(&t).reason);
}

#[test]
fn a_change_that_passes_more_than_the_user_confirmed_is_the_decisive_step() {
    // A hand-built Google ADK session: the user asks to be asked before any change; the assistant
    // verifies the account holder (a lookup, no change), reads the invoice, proposes "a credit of
    // $42.50 for line R2", the user says yes, and `apply_credit` passes 61.0 for lines R2 and R3
    // (the data add-on the user said was right). The closing message says $42.50.
    let t = crate::chat::fixture("handbuilt/google-adk/roaming_credit_beyond_confirmed.adk.json");
    assert_eq!(t.steps[1].tool_name.as_deref(), Some("verify_account_holder"));
    assert!(!signals::changes_state(&t, 1));
    assert!(signals::changes_state(&t, 9));
    assert_eq!(findings(&t), vec![(9, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 9, Signal::ArgumentMismatch),
        "apply_credit passes amount 61.0 and line_ids R2, R3, but the proposal at step 7 that the user confirmed \
         at step 8 names $42.50 and R2"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(9), Some("billing_assistant")), "{}", d.reason);
}

#[test]
fn a_change_that_passes_what_the_user_confirmed_is_no_finding() {
    // The same session with the call the user agreed to: the amount asked and line R2 only.
    let mut t = crate::chat::fixture("handbuilt/google-adk/roaming_credit_beyond_confirmed.adk.json");
    t.steps[9].content = t.steps[9].content.replace("61.0", "42.5").replace("[\"R2\",\"R3\"]", "[\"R2\"]");
    assert!(t.steps[9].content.contains("\"amount\":42.5"), "{}", t.steps[9].content);
    assert_eq!(findings(&t), vec![]);
    // The proposal's question names the sum; a price quoted before it is no confirmed sum.
    let t = load(vec![
        system(POLICY_PLAIN),
        user("The kettle of order #K-20417 arrived broken, please refund it."),
        assistant(
            "Your order has the kettle ($89.90) and two filters at $6.50 each. Shall I refund $89.90 for the kettle?",
        ),
        user("Yes please."),
    ]
    .into_iter()
    .chain(call("c1", "refund_items", json!({"order_id": "#K-20417", "amount": 6.5}), "{\"status\": \"refunded\"}"))
    .chain([assistant("Done: $89.90 refunded.")])
    .collect());
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "refund_items passes amount 6.5, but the proposal at step 2 that the user confirmed at step 3 names $89.90"
    );
}

/// A read-only query of a package manager (`pip show … && pip index versions …`) that fails on
/// the network is no rejected state change, nor a failed action: nothing was asked to change.
/// The agent that tells the user so, with what the local query gave, made no error; the one that
/// answers as if the index had been read goes on after the error.
#[test]
fn a_package_query_that_fails_offline_is_no_rejected_change() {
    use crate::chat::{ClaudeTurn, claude_session};
    let dns = "Name: urllib3\nVersion: 2.2.1\nLocation: /w/.venv/lib/python3.12/site-packages\n\
        WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after \
        connection broken by 'NewConnectionError(\"<pip._vendor.urllib3.connection.HTTPSConnection object at \
        0x7f3c2a1b9d10>: Failed to establish a new connection: [Errno -3] Temporary failure in name \
        resolution\")': /simple/urllib3/\nERROR: Could not fetch versions for urllib3 (exit 1)";
    let query_run = |output: &str, closing: &str| {
        claude_session(
            "Which urllib3 is installed here, and is there a newer release? Don't change anything.",
            &[
                ClaudeTurn::Call(
                    "Bash",
                    json!({"command": "pip show urllib3 && pip index versions urllib3", "description": "Show urllib3"}),
                    output,
                    true,
                ),
                ClaudeTurn::Text(closing),
            ],
        )
    };
    let d = falat(&query_run(
        dns,
        "urllib3 2.2.1 is installed, and it is the latest release, so there is nothing newer to move to.",
    ));
    assert_eq!(d.decisive_step, Some(3), "the message that goes on without the answer: {}", d.reason);
    assert!(d.reason.contains("goes on after the error at step 2 (ignored_tool_error)"), "{}", d.reason);
    let t = query_run(
        dns,
        "urllib3 2.2.1 is installed (from `pip show`). I could not check for newer releases: \
         pip could not reach the package index (name resolution failed, no network here).",
    );
    let rejected: Vec<usize> = crate::chat::steps_with(&t, Signal::RejectedAction);
    assert_eq!(rejected, Vec::<usize>::new());
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(
        d.reason.starts_with("No failure found: the query at step 1 failed, which the agent tells at step 3"),
        "{}",
        d.reason
    );
}

/// Three regional queries, the second of which (`APAC`) ends as `apac`, then the closing report.
fn regions_run(apac: &str, report: &str) -> Trajectory {
    let q = |region: &str| json!({"sql": format!("SELECT SUM(amount) FROM orders WHERE region = '{region}' AND quarter = '2025Q3'")});
    load(messages(vec![
        vec![
            system("You are a sales analyst. Answer from the warehouse only."),
            user("What were Q3 2025 order totals for EMEA, APAC and AMER?"),
        ],
        call("c1", "run_sql", q("EMEA"), r#"{"rows": [{"sum": 1204331.50}]}"#),
        call("c2", "run_sql", q("APAC"), apac),
        call("c3", "run_sql", q("AMER"), r#"{"rows": [{"sum": 2408790.00}]}"#),
        vec![assistant(report)],
    ]))
}

/// A report that all parts are done after one of its queries timed out hides the failure: the
/// claim is the decisive step. The same report that tells the timeout, or a run where every
/// query returned, has no such finding.
#[test]
fn a_claim_that_every_part_is_done_after_one_failed_is_found_at_the_claim() {
    const TIMEOUT: &str = r#"{"error": "ERROR:  canceling statement due to statement timeout"}"#;
    let t = regions_run(
        TIMEOUT,
        "All three regional queries completed. Q3 2025 totals: EMEA $1,204,331.50 and AMER $2,408,790.00.",
    );
    assert_eq!(crate::chat::steps_with(&t, Signal::IgnoredToolError), vec![8]);
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(8), Some("assistant")), "{}", d.reason);
    assert_eq!(
        evidence(&t, 8, Signal::IgnoredToolError),
        "claims \"All three regional queries completed.\" while its run_sql call at step 4 failed at step 5 \
         ({\"error\": \"ERROR:  canceling statement due to statement timeout\"}), which it never told"
    );
    let told = regions_run(
        TIMEOUT,
        "The APAC query timed out; the other two completed. Q3 2025 totals: EMEA $1,204,331.50 and AMER $2,408,790.00.",
    );
    assert_eq!(crate::chat::steps_with(&told, Signal::IgnoredToolError), Vec::<usize>::new());
    let fine = regions_run(
        r#"{"rows": [{"sum": 876120.25}]}"#,
        "All three regional queries completed. Q3 2025 totals: EMEA $1,204,331.50, APAC $876,120.25 and AMER $2,408,790.00.",
    );
    assert_eq!(crate::chat::findings(&fine), Vec::new());
    assert_eq!(falat(&fine).decisive_step, None);
}

/// A tool call that sets a duration in the key's unit: the user's "2 minutes" as
/// `"hold_seconds": 12` is a unit error of the call; 120 is right.
#[test]
fn a_duration_a_call_sets_with_the_wrong_factor_is_found_at_the_call() {
    let run = |seconds: u32| {
        load(messages(vec![
            vec![system(POLICY_PLAIN), user("Please hold seat 14C for me for 2 minutes while I check with my wife.")],
            call(
                "c1",
                "hold_seat",
                json!({"seat": "14C", "hold_seconds": seconds}),
                r#"{"status": "held", "seat": "14C"}"#,
            ),
            vec![assistant("Seat 14C is held for you.")],
        ]))
    };
    let t = run(12);
    assert_eq!(findings(&t), vec![(2, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 2, Signal::ArgumentMismatch),
        "writes hold_seconds: 12, but the user asked for 2 minutes at step 1, which is hold_seconds: 120"
    );
    assert_eq!(findings(&run(120)), vec![]);
}

/// An AutoGen AgentChat `TaskResult` (SelectorGroupChat): a planner's "Plan:" turn (dates and a
/// time limit it knows), a stock analyst who counts three warehouses one query each, the second
/// ending as `north`, then its summary `summary`, a writer's report and the planner's close.
fn warehouses_run(north: (&str, bool), summary: &str) -> Trajectory {
    let text = |source: &str, content: &str| json!({"source": source, "models_usage": null, "metadata": {}, "content": content, "type": "TextMessage"});
    let calls = |ids: &[(&str, &str)]| {
        let content: Vec<Value> = ids
            .iter()
            .map(|(id, site)| json!({"id": id, "name": "run_sql", "arguments": json!({"query": format!("SELECT SUM(qty) FROM stock WHERE site = '{site}' AND day = '2026-11-30'")}).to_string()}))
            .collect();
        json!({"source": "stock_analyst", "models_usage": null, "metadata": {}, "content": content, "type": "ToolCallRequestEvent"})
    };
    let results = |rows: &[(&str, &str, bool)]| {
        let content: Vec<Value> = rows
            .iter()
            .map(|(id, c, err)| json!({"call_id": id, "name": "run_sql", "content": c, "is_error": err}))
            .collect();
        json!({"source": "stock_analyst", "models_usage": null, "metadata": {}, "content": content, "type": "ToolCallExecutionEvent"})
    };
    let doc = json!({"messages": [
        text("user", "Give me the month-end stock count of SKU 4471 for the South, North and East warehouses and the total, for the inventory review. Reply TERMINATE when done."),
        text("planner", "Plan:\n1. stock_analyst: sum `stock.qty` for SKU 4471 per site for 2026-11-30, one query per site (the warehouse has a 30 s statement timeout).\n2. report_writer: write the counts and the total."),
        calls(&[("q1", "South"), ("q2", "North"), ("q3", "East")]),
        results(&[("q1", "sum\n-----\n1840\n(1 row)", false), ("q2", north.0, north.1), ("q3", "sum\n-----\n2215\n(1 row)", false)]),
        text("stock_analyst", summary),
        text("report_writer", "**SKU 4471 month-end stock**\n\n| Site | Units |\n|---|---|\n| South | 1,840 |\n| East | 2,215 |\n| **Total** | **4,055** |"),
        text("planner", "The count and the total are in the report. TERMINATE"),
    ], "stop_reason": "Text 'TERMINATE' mentioned"});
    let bytes = serde_json::to_vec(&doc).expect("serialises");
    falat::ingest::parse("run.json", &bytes, None).expect("an AgentChat TaskResult").trajectories.remove(0)
}

/// A worker's "all done" over a failure it never told is what its teammates act on: it is named,
/// not pruned as a step whose output nobody reuses; and a planner's "Plan:" turn is a plan, whose
/// dates and limits are no invented values.
#[test]
fn a_worker_s_all_done_over_a_hidden_timeout_is_named_in_a_team_run() {
    const TIMEOUT: (&str, bool) = ("ERROR:  canceling statement due to statement timeout", true);
    let t =
        warehouses_run(TIMEOUT, "Month-end stock of SKU 4471: South 1,840, East 2,215. All site queries completed.");
    assert_eq!(t.steps[1].agent, "planner");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new(), "the plan states no invented value");
    let claim = t.steps.iter().position(|s| s.content.contains("All site queries completed")).expect("the claim");
    assert_eq!(steps_with(&t, Signal::IgnoredToolError), vec![claim]);
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(claim), Some("stock_analyst")), "{}", d.reason);
    let c = d.candidates.iter().find(|c| c.step == claim).expect("a candidate");
    assert!(c.pruned.is_none(), "{:?}", c.pruned);
    // The same summary telling the timeout: the writer's total is then the team's informed choice.
    let told =
        warehouses_run(TIMEOUT, "Month-end stock of SKU 4471: South 1,840, East 2,215. The North query timed out.");
    assert_eq!(steps_with(&told, Signal::IgnoredToolError), Vec::<usize>::new());
}

/// An order of three items; the user confirms the return of the espresso machine; the call
/// passes `item` (the espresso machine's id, or the coffee maker's above it).
fn return_of(item: &str) -> Trajectory {
    let order = r##"{"order_id": "#W5918442", "status": "delivered", "items": [
        {"name": "Coffee Maker", "item_id": "1323134954", "price": 236.95},
        {"name": "Espresso Machine", "item_id": "3815173328", "price": 2908.42},
        {"name": "Electric Kettle", "item_id": "9472539378", "price": 143.72}],
        "payment_history": [{"amount": 3289.09, "payment_method_id": "paypal_8041230"}]}"##;
    load(messages(vec![
        vec![system(POLICY_CONFIRM), user("I need to return the espresso machine from order #W5918442, it leaks.")],
        call("c1", "get_order_details", json!({"order_id": "#W5918442"}), order),
        vec![
            assistant(
                "I found it: Espresso Machine — $2,908.42, refund to PayPal (paypal_8041230). Shall I proceed with \
                 this return? Please confirm with yes.",
            ),
            user("yes"),
        ],
        call(
            "c2",
            "return_delivered_order_items",
            json!({"order_id": "#W5918442", "item_ids": [item], "payment_method_id": "paypal_8041230"}),
            r##"{"order_id": "#W5918442", "status": "return requested"}"##,
        ),
        vec![assistant("Your return is requested. Anything else?")],
    ]))
}

#[test]
fn a_change_that_passes_the_next_records_id_in_a_list_of_ids_is_an_argument_mismatch() {
    let t = return_of("1323134954");
    assert_eq!(findings(&t), vec![(6, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 6, Signal::ArgumentMismatch),
        "return_delivered_order_items acts on item_id 1323134954 (\"Coffee Maker\"), but step 4 describes \"espresso\", \
         \"machine\", which only item_id 3815173328 (\"Espresso Machine\") of the list at step 3 has"
    );
    assert_eq!(falat(&t).decisive_step, Some(6));
    // The confirmed record's own id.
    assert_eq!(findings(&return_of("3815173328")), vec![]);
}

#[test]
fn a_transfer_of_a_record_to_another_agent_needs_the_users_confirmation() {
    let t = load(messages(vec![
        vec![system(POLICY_CONFIRM), user("What are my options for policy P-2291? My agent retired.")],
        call(
            "c1",
            "transfer_policy_to_agent",
            json!({"policy_id": "P-2291", "agent_id": "AG-77"}),
            r##"{"policy_id": "P-2291", "agent_of_record": "AG-77"}"##,
        ),
        vec![assistant("Done: your policy now sits with agent AG-77.")],
    ]));
    assert_eq!(findings(&t), vec![(2, Signal::UnconfirmedAction)]);
}

/// A search for direct flights comes back empty and the assistant tells the user there are no
/// flights at all (`reply`); one-stop flights are searched only after the user complains.
fn direct_only(reply: &str) -> Trajectory {
    load(messages(vec![
        vec![
            system("# Airline agent policy\n- You can search, book, modify and cancel flights."),
            user("I need a one-way flight JFK to Seattle on May 22nd. A connection is totally fine."),
        ],
        call("c1", "search_direct_flight", json!({"origin": "JFK", "destination": "SEA", "date": "2024-05-22"}), "[]"),
        vec![assistant(reply), user("My sister just booked HAT057 via Chicago on the 22nd!")],
        call(
            "c2",
            "search_onestop_flight",
            json!({"origin": "JFK", "destination": "SEA", "date": "2024-05-22"}),
            r##"[[{"flight_number": "HAT057", "origin": "JFK", "destination": "ORD"}]]"##,
        ),
        vec![assistant("I only searched direct flights; HAT057 with a stop in Chicago is available.")],
    ]))
}

#[test]
fn a_none_told_after_searching_with_only_one_tool_of_its_family_is_a_partial_search() {
    let t = direct_only("I'm sorry, there are no available flights from JFK to Seattle on 2024-05-22.");
    assert_eq!(crate::chat::steps_with(&t, Signal::PartialSearch), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::PartialSearch),
        "says \"there are no available flights\" after searching only with search_direct_flight (step 2), which \
         found none; search_onestop_flight (step 6) searches flights too"
    );
    assert_eq!(falat(&t).decisive_step, Some(4));
    // Told as what was searched, it is no wider claim.
    let t = direct_only("I'm sorry, there are no direct flights from JFK to Seattle on 2024-05-22.");
    assert_eq!(crate::chat::steps_with(&t, Signal::PartialSearch), Vec::<usize>::new());
}
